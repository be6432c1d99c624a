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


def test_one_worker_a_gpu_and_the_rest_on_the_cpu():
    """Issue 45, measured on an H200: processes sharing a GPU answered less at more CPU than one alone."""
    from server.processes import worker_devices

    assert worker_devices("auto", 4, gpus=0) == ["cpu"] * 4
    assert worker_devices("cpu", 4, gpus=2) == ["cpu"] * 4
    assert worker_devices("auto", 4, gpus=1) == ["cuda", "cpu", "cpu", "cpu"]
    assert worker_devices("cuda", 3, gpus=2) == ["cuda:0", "cuda:1", "cpu"]
    assert worker_devices("cuda", 3, gpus=0) == ["cuda", "cpu", "cpu"]        # asked for: it says why it cannot
    assert worker_devices("auto", 3, gpus=1, gpu_workers=3) == ["cuda"] * 3    # the operator's choice
    assert worker_devices("cuda", 2, gpus=1, gpu_workers=0) == ["cpu", "cpu"]


def test_gpus_are_counted_without_torch(monkeypatch):
    from server.processes import gpus_here

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert gpus_here() == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpus_here() == 0
