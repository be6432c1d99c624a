"""Issue 53: an explanation of a pool image is computed once and shared by every worker (server/explanation_cache.py,
server/explained_rounds.py). A round read from the cache shows and logs the bytes its computation gave, asks the
agent about the secret only, and the cache stays within its bound; shams and undeclared plugins are never cached;
a cache that cannot be reached costs time, never a round."""
from __future__ import annotations

import copy

import pytest
import redis as redis_lib

from explainers.base import Explainer
from game.pool import GamePool
from server import json_text
from server.embedded_redis import EmbeddedRedis
from server.explained_rounds import answer_rounds, cache_keys
from server.explanation_cache import INDEX, PREFIX, ExplanationCache, normalised_question, shared_cache
from server.inference import Predictor, RoundRequest
from server.rounds import RoundJob
from server.worker import WorkerConfig, explainer_options

EXPLAINERS = ("attention", "objscene", "relqa", "nle", "introspect")


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    embedded = EmbeddedRedis(tmp_path_factory.mktemp("xc")).start()
    yield redis_lib.Redis.from_url(embedded.url, decode_responses=True)
    embedded.stop()


@pytest.fixture(scope="module")
def predictor(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    from vqa_agent.agent import VQAAgent
    agent = VQAAgent.from_pretrained(tiny_agent_dir, device="cpu")
    config = WorkerConfig("redis://unused", agent_world, tmp_path_factory.mktemp("data"), str(tiny_agent_dir),
                          explainer_options={"relqa": {"min_bank": 50}, "nle": {"model": str(tiny_nle_dir)}})
    return Predictor(agent, explainer_options(config, str(tiny_agent_dir)))


@pytest.fixture(scope="module")
def pool(agent_world):
    return GamePool(agent_world)


@pytest.fixture
def cached(predictor, client):
    """The predictor with a fresh shared cache (emptied), and without one again afterwards."""
    client.flushdb()
    predictor.cache = shared_cache(client, predictor)
    yield predictor
    predictor.cache = None


def rounds(pool, every=("attention", "relqa"), secret=("objscene", "nle", "introspect"), question="is there a red cube?",
           images=(0, 1, 2, 3, 4), position=2) -> list[tuple[RoundJob, RoundRequest]]:
    job = RoundJob("round", list(images), question, position, [f"t{k}" for k in range(len(images))],
                   list(every), list(secret))
    request = RoundRequest([pool.known(i) for i in images], question, position, tuple(every), tuple(secret), seed=3)
    return [(job, request)]


def comparable(result: dict) -> str:
    """A round's result without what may differ between a computed and a cached explanation (when it was
    computed, how long it took), and without the secret's probability (`probability` compares it): the secret
    is answered every round, in a batch of the images whose explanations are not cached, and a batch's shape
    moves the last bits of its sums (server/inference.py)."""
    result = copy.deepcopy(result)
    result.pop("inference_ms")
    result["graded"].pop("probability")
    for entry in result["shown"]["log"]:
        entry.pop("seconds")
        entry.pop("cached", None)
    return json_text.dumps(result)


def test_a_cached_round_shows_and_logs_the_bytes_its_computation_gave(predictor, pool, client):
    client.flushdb()
    predictor.cache = None
    try:
        missing = set(EXPLAINERS) - set(predictor.explainers)
        assert not missing, f"every built-in explainer is loaded: {missing}"
        plain = answer_rounds(predictor, rounds(pool), pool)[0]
        predictor.cache = shared_cache(client, predictor)
        cold = answer_rounds(predictor, rounds(pool), pool)[0]
        assert predictor.cache.counts.hits == 0 and predictor.cache.counts.misses == 5 * 2 + 3
        warm = answer_rounds(predictor, rounds(pool), pool)[0]
        assert predictor.cache.counts.hits == 13
        assert comparable(plain) == comparable(cold) == comparable(warm)
        assert cold["graded"]["probability"] == pytest.approx(plain["graded"]["probability"], rel=1e-5) == \
            pytest.approx(warm["graded"]["probability"], rel=1e-5)
        assert all(entry["cached"] for entry in warm["shown"]["log"])
        assert not any("cached" in entry for entry in cold["shown"]["log"])
        assert {e["explainer"] for e in warm["shown"]["log"]} == set(EXPLAINERS)
        # the same question typed otherwise (case, spaces) is the same entry; another question is not
        assert normalised_question("  Is there a  RED cube? ") == "is there a red cube?"
        again = answer_rounds(predictor, rounds(pool, question="Is  there a RED cube?"), pool)[0]
        assert all(entry["cached"] for entry in again["shown"]["log"])
        other = answer_rounds(predictor, rounds(pool, question="how many spheres are there?"), pool)[0]
        assert not any(entry.get("cached") for entry in other["shown"]["log"])
    finally:
        predictor.cache = None


def test_a_round_whose_explanations_are_all_cached_asks_the_agent_about_the_secret_alone(cached, pool):
    predictor = cached
    answer_rounds(predictor, rounds(pool), pool)
    (job, request), = rounds(pool)
    known = frozenset(cache_keys(predictor, predictor.cache, request))
    all_known = RoundRequest(request.images, request.question, request.secret, request.for_every_image,
                             request.for_the_secret, request.seed, known)
    assert predictor.positions_to_answer(all_known) == [request.secret]
    result = predictor.predict([all_known])[0]
    assert [k for k, o in enumerate(result.outputs) if o is not None] == [request.secret]
    assert not any(result.for_every_image) and not result.for_the_secret
    # one image's attention missing: that image is answered too
    partial = RoundRequest(*[getattr(all_known, f) for f in ("images", "question", "secret", "for_every_image",
                                                              "for_the_secret", "seed")], known - {("attention", 4)})
    assert predictor.positions_to_answer(partial) == [2, 4]


def test_shams_and_undeclared_explainers_are_never_cached(cached, pool, client):
    predictor = cached
    sham = rounds(pool, every=("attention-shuffled",), secret=("nle-other",))
    assert cache_keys(predictor, predictor.cache, sham[0][1]) == {}
    first, second = (answer_rounds(predictor, sham, pool)[0] for _ in range(2))
    assert comparable(first) == comparable(second) and not any(e.get("cached") for e in second["shown"]["log"])
    assert not client.keys(PREFIX + "*")
    # with a sham in the round every image is answered (it shows another image's explanation)
    assert predictor.positions_to_answer(sham[0][1]) == [0, 1, 2, 3, 4]
    # an explainer that does not declare `cacheable` (a third-party one, say) is computed every round

    class Undeclared(Explainer):
        name, kind = "undeclared", "text"

        def payloads(self, requests):
            return [{"text": f"I answered {r.output.answer}."} for r in requests]

    predictor.explainers["undeclared"] = Undeclared(predictor.agent)
    try:
        assert cache_keys(predictor, predictor.cache, rounds(pool, every=("undeclared",), secret=())[0][1]) == {}
        assert cache_keys(predictor, predictor.cache, rounds(pool, every=("attention",), secret=())[0][1])
    finally:
        del predictor.explainers["undeclared"]


def test_the_cache_keeps_at_most_its_bound_dropping_the_oldest(client):
    client.flushdb()
    cache = ExplanationCache(client, "f" * 32, {"attention": {"x": 1}}, max_entries=3, ttl_s=60)
    keys = [cache.key("attention", f"image-{k}", "q") for k in range(5)]
    for k, key in enumerate(keys):
        cache.put_many({key: {"view": k, "log": {}}})
    assert [p and p["view"] for p in cache.get_many(keys)] == [None, None, 2, 3, 4]
    assert client.zcard(INDEX) == 3 and 0 < client.ttl(keys[-1]) <= 60
    assert cache.counts.take() == {"xcache:hits": 3, "xcache:misses": 2} and cache.counts.hits == 0
    # the agent and the explainer's options are part of the key: another agent or option never reads it
    assert ExplanationCache(client, "e" * 32, {"attention": {"x": 1}}).key("attention", "image-4", "q") != keys[4]
    assert ExplanationCache(client, "f" * 32, {"attention": {"x": 2}}).key("attention", "image-4", "q") != keys[4]
    with pytest.raises(ValueError, match="max_entries"):
        ExplanationCache(client, "f" * 32, max_entries=0)


def test_a_cache_that_cannot_be_reached_costs_time_not_rounds(predictor, pool, tmp_path):
    gone = redis_lib.Redis.from_url(f"unix://{tmp_path}/no-redis.sock", decode_responses=True, socket_timeout=0.5)
    predictor.cache = shared_cache(gone, predictor)
    try:
        result = answer_rounds(predictor, rounds(pool), pool)[0]
        assert "error" not in result and len(result["shown"]["log"]) == 13
    finally:
        predictor.cache = None
