"""What an inference worker does while idle: it looks at the pool's images, so that a new game's images are
usually seen already (the agent keeps what it saw of `feature_cache` of them; server/worker.py).

On a first start one worker of the agent looks at the whole pool and stores it beside the world (it holds the
`CLAIM`, renewed as it goes; a worker that stopped loses it to another after CLAIM_S); the others look every
LOOK_FOR_STORED_S whether it was stored, and load it (~1 s) instead of looking at 1,500 images themselves
(~15 s of CPU each; issue 45: twelve workers doing so at once took ~90 ms of CPU per reply on 16 cores). Later
starts load what was stored. Not when rounds must be batch-invariant (those features are computed image by
image), nor with a feature cache smaller than the pool: then each worker looks for itself.

    looking = PoolLook(worker)
    if looking.due() and looking.here():   # in the worker's idle step
        looking.step()
"""
from __future__ import annotations

import time
from pathlib import Path

CLAIM = "exag:pool-look:{}"   # the worker looking at the whole pool for this stored-features file
CLAIM_S = 30                  # the claim lapses this long after its holder's last step
LOOK_FOR_STORED_S = 2.0       # how often the other workers look for the stored pool meanwhile
STEP_IMAGES = 4               # pool images looked at per idle step (~0.05 s on one core)


class PoolLook:
    def __init__(self, worker) -> None:
        self.worker, self.pool, config = worker, worker.pool, worker.config
        self.cache_dir = Path(config.data_dir) / "cache"
        self.until = min(len(self.pool), config.feature_cache or len(self.pool))
        self.shared = not config.batch.batch_invariant and self.until == len(self.pool)   # stored and loaded
        self.next = 0 if config.warm_pool else len(self.pool)
        self.stored = False
        self._looked_for_stored = 0.0
        if config.warm_pool:
            self.load_stored()

    def due(self) -> bool:
        return self.next < self.until

    def here(self) -> bool:
        """Whether this worker looks now (it holds the claim, or takes it), else whether it loaded the stored pool."""
        if not self.shared:
            return True
        key = CLAIM.format(self.pool.features_paths(self.worker.config.agent, self.cache_dir)[0])
        redis = self.worker.redis
        if redis.set(key, self.worker.name, nx=True, ex=CLAIM_S) or redis.get(key) == self.worker.name:
            redis.expire(key, CLAIM_S)
            return True
        if time.monotonic() >= self._looked_for_stored + LOOK_FOR_STORED_S:
            self._looked_for_stored = time.monotonic()
            self.load_stored()
        return False

    def step(self) -> None:
        start, self.next = self.next, min(self.next + STEP_IMAGES, self.until)
        self.worker.predictors[""].prepare([self.pool.known(i) for i in range(start, self.next)])
        if self.next == len(self.pool) and not self.stored:
            self.stored = True
            if self.shared:
                self.pool.store_features(self.worker.config.agent, self.worker.predictors[""].agent, self.cache_dir)

    def load_stored(self) -> None:
        """Starts with what a worker of the same agent stored of the whole pool, when there is such a file."""
        if self.shared and self.pool.load_features(self.worker.config.agent, self.worker.predictors[""].agent,
                                                   self.cache_dir):
            self.next, self.stored = self.until, True
