"""Drop-in replacements for torch.optim's SGD, Adam, AdamW, RMSprop, Adagrad and Adadelta
whose step() makes one fused opforge call per (device, dtype) group of parameters.

A foreach=False torch.optim step launches several ATen ops per parameter; here each
param_group's parameters with a gradient are split by device and dtype and each part is
one call of ``opforge.<name>_step_`` (``torch.ops.opforge.<name>_step_``), which reads
every element once and writes every state once. Constructor arguments, defaults and
checks, param_group keys and state keys ('step' as a float32 0-d tensor, 'exp_avg', ...)
are torch.optim's, so ``load_state_dict`` works both ways, and trajectories match
torch.optim's up to rounding. Differences:

- foreach and fused are accepted and change nothing (the step is always fused);
  differentiable=True and capturable=True, sparse gradients and complex parameters are
  refused.
- 'step' lives on the parameter's device (the ops read it there); one loaded from torch,
  which keeps it on the CPU, is moved on the first step.
- bfloat16/float16 parameters are updated in float32 and rounded once per state write
  (torch rounds after every intermediate op), so 16-bit trajectories agree only loosely.
- RMSprop takes ``eps_in_sqrt=True`` for TensorFlow's sqrt(v + eps).

Use it as torch.optim: ``opt = opforge.optim.AdamW(model.parameters(), lr=1e-3)``, then
``loss.backward(); opforge.optim.clip_grad_norm_(model.parameters(), 1.0); opt.step();
opt.zero_grad()`` (``clip_grad_norm_`` is torch.nn.utils.clip_grad_norm_'s drop-in, one
fused ``opforge.clip_grad_norm_`` call for gradients of one device and dtype).
"""

from opforge.optim._clip import clip_grad_norm_
from opforge.optim._optimizers import SGD, Adadelta, Adagrad, Adam, AdamW, RMSprop

__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "RMSprop", "clip_grad_norm_"]
