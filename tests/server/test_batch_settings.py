"""A worker's batching by device (issue 45): a GPU takes many rounds a batch, a CPU few; what `exag serve`
is told overrides both, and what it is not told is left to each worker's device."""
from __future__ import annotations

from server.config import ServerConfig
from server.inference import GPU_BATCH, BatchSettings
from server.processes import worker_arguments


def test_each_device_has_its_defaults_and_a_setting_overrides_them():
    assert BatchSettings.for_device("cpu") == BatchSettings()
    assert BatchSettings.for_device("cuda") == BatchSettings.for_device("cuda:1") == GPU_BATCH
    assert GPU_BATCH.max_batch_rounds > BatchSettings().max_batch_rounds
    assert BatchSettings.for_device("cuda", 4, 0.0, True) == BatchSettings(4, 0.0, True)
    assert BatchSettings.for_device("cpu", max_wait_ms=0.0).max_wait_ms == 0.0      # zero is a setting, not unset


def test_serve_passes_only_what_it_was_told():
    arguments = worker_arguments(ServerConfig(worker_device="cuda"), threads=1)
    assert "--max-batch-rounds" not in arguments and "--max-wait-ms" not in arguments
    arguments = worker_arguments(ServerConfig(max_batch_rounds=3, max_wait_ms=2.0), threads=1)
    assert arguments[arguments.index("--max-batch-rounds") + 1] == "3"
    assert arguments[arguments.index("--max-wait-ms") + 1] == "2.0"
