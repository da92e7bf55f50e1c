"""An independent NumPy implementation of torchao's 8-bit, 4-bit and FP8 optimizer-state formats and of
its AdamW update (torchao/optim/adam.py, quant_utils.py), in float32 in torchao's order, each
code found by an exhaustive search over the map. The tests hold widefuse's kernels to it."""

import ml_dtypes
import numpy as np

F32 = np.float32


def linspace(start, end, steps):
    """torch.linspace in float32 as ATen's scalar CPU kernel counts: up from start for the
    first half, down from end for the second."""
    start, end = F32(start), F32(end)
    step = (end - start) / F32(steps - 1)
    half = steps // 2
    return np.array([start + step * F32(i) if i < half else end - step * F32(steps - i - 1)
                     for i in range(steps)], dtype=F32)


def dynamic_map(signed, max_exponent_bits=7, total_bits=8):
    """bitsandbytes' create_dynamic_map (torchao's copy): midpoints of linspace(0.1, 1) per
    exponent level, scaled by a float32 power of ten, both signs when signed; 0 and 1."""
    values = []
    for i in range(max_exponent_bits):
        items = 2 ** (i + total_bits - 1 - max_exponent_bits + (0 if signed else 1)) + 1
        bounds = linspace(0.1, 1.0, items)
        means = (bounds[:-1] + bounds[1:]) / F32(2.0)
        scale = F32(10.0 ** (i - max_exponent_bits + 1))
        values += list(scale * means)
        if signed:
            values += list(-scale * means)
    values += [F32(0.0), F32(1.0)]
    return np.sort(np.array(values, dtype=F32))


def nearest_codes(x, table):
    """The largest c with table[c] <= x by counting every entry (0 when none), then c + 1
    when x - table[c] >= half the gap, in float32."""
    x = np.asarray(x, dtype=F32)
    below = (table[None, :] <= x.reshape(-1, 1)).sum(axis=1) - 1
    code = np.clip(below, 0, table.size - 1)
    up = np.minimum(code + 1, table.size - 1)
    half = (table[up] - table[code]) * F32(0.5)
    code = np.where(x.reshape(-1) - table[code] >= half, up, code)
    return code.astype(np.uint8).reshape(x.shape)


class Format:
    """One format: `name` "int8", "int4" or "fp8", blocks of `block` elements (torchao's
    default: 128 for int4, else 256). int4 packs each pair of codes in a byte, the even
    element's in the high nibble, flat; its maps are the signed 3-exponent-bit dynamic map
    and the zero-free linear map k/16."""

    def __init__(self, name, block=None):
        self.name = name
        self.block = block or (128 if name == "int4" else 256)
        if name == "int4":
            self.tables = {True: dynamic_map(True, 3, 4), False: linspace(0.0, 1.0, 17)[1:]}
        else:
            self.tables = {True: dynamic_map(True), False: dynamic_map(False)}

    def zeros(self, shape):
        n = int(np.prod(shape))
        dtype = ml_dtypes.float8_e4m3fn if self.name == "fp8" else np.uint8
        codes_shape = (n // 2,) if self.name == "int4" else shape
        return np.zeros(codes_shape, dtype=dtype), np.zeros(n // self.block, dtype=F32)

    def dequantize(self, codes, scale, signed):
        if self.name == "int4":
            codes = np.stack([codes >> 4, codes & 15], axis=-1)
        blocks = codes.reshape(-1, self.block)
        values = (blocks.astype(F32) if self.name == "fp8" else self.tables[signed][blocks])
        return values * scale[:, None]

    def quantize(self, x, signed):
        blocks = x.reshape(-1, self.block)
        absmax = np.maximum(np.abs(blocks).max(axis=1), F32(1e-12))
        if self.name == "fp8":
            scale = absmax / F32(448.0)
            codes = (blocks / scale[:, None]).astype(ml_dtypes.float8_e4m3fn)
        else:
            scale = absmax
            codes = nearest_codes(blocks / scale[:, None], self.tables[signed])
        if self.name == "int4":
            pairs = codes.reshape(-1, 2)
            return (pairs[:, 0] << 4) | pairs[:, 1], scale
        return codes.reshape(x.shape), scale


def lerp(start, end, weight):
    """torch's (and widefuse's) lerp in float32, each product rounded."""
    weight = F32(weight)
    if abs(weight) < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (F32(1) - weight)


class AdamW:
    """torchao's AdamW step on one parameter whose moments `fmt` keeps (None: float32)."""

    def __init__(self, param, fmt, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        self.p = param.astype(F32)
        self.fmt, self.lr, self.betas, self.eps, self.wd = fmt, lr, betas, eps, weight_decay
        self.step_count = F32(0)
        quantized = fmt is not None and param.size >= 4096 and param.size % fmt.block == 0
        self.quantized = quantized
        if quantized:
            self.m = fmt.zeros(param.shape)
            self.v = fmt.zeros(param.shape)
        else:
            self.m = np.zeros(param.shape, F32)
            self.v = np.zeros(param.shape, F32)

    def moments(self):
        if not self.quantized:
            return self.m, self.v
        shape = self.p.shape
        return (self.fmt.dequantize(*self.m, True).reshape(shape),
                self.fmt.dequantize(*self.v, False).reshape(shape))

    def step(self, grad):
        beta1, beta2 = F32(self.betas[0]), F32(self.betas[1])
        lr = F32(self.lr)
        self.step_count = self.step_count + F32(1)
        p, g = self.p, grad.astype(F32)
        p = p - lr * F32(self.wd) * p
        bc1 = F32(1) - np.power(beta1, self.step_count, dtype=F32)
        bc2 = F32(1) - np.power(beta2, self.step_count, dtype=F32)
        m, v = self.moments()
        m = lerp(m, g, 1 - self.betas[0])
        v = lerp(v, g * g, 1 - self.betas[1])
        if self.quantized:
            self.m, self.v = self.fmt.quantize(m, True), self.fmt.quantize(v, False)
        else:
            self.m, self.v = m, v
        denom = np.sqrt(v) / np.sqrt(bc2) + F32(self.eps)
        self.p = p - lr * (m / bc1) / denom


def _splitmix64_finalize(z):
    """SplitMix64's finalizer on uint64 arrays (wrapping)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def random_16_bits(seed, step, count):
    """The top 16 bits of SplitMix64 of (its finalized seed + step * golden) + (index + 1) *
    golden, for indices 0..count-1: the counter-based bits of widefuse's stochastic rounding."""
    golden = np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        key = _splitmix64_finalize(np.uint64(seed % (1 << 64)) + np.uint64(step) * golden)
        index = np.arange(count, dtype=np.uint64)
        bits = _splitmix64_finalize(key + (index + np.uint64(1)) * golden)
    return (bits >> np.uint64(48)).astype(np.int64)


def stochastic_bf16(values, random16):
    """torchao's _fp32_to_bf16_sr on float32 values: the high half, plus one unit where the
    random 16 bits are below the dropped low half (int32 arithmetic, wrapping)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.int64)
    toward_zero = bits & 0xFFFF0000
    rounded = np.where(random16 < (bits & 0xFFFF), toward_zero + 0x10000, toward_zero)
    return (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32).astype(ml_dtypes.bfloat16)
