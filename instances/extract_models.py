"""Build real-model instances with torch.fx and write them as memsched-graph JSON.

Models are defined here (plain PyTorch, no torchvision needed; when torchvision is
installed ``--torchvision`` takes ResNet/Inception/DeepLab/MobileNet from it instead):
ResNet-18, ResNet-50, Inception-v3, DeepLabV3 (ResNet-50 backbone, output stride 8),
U-Net, MobileNetV2, a pre-norm transformer block, and two microcontroller-class
CNNs (DS-CNN keyword spotting, MLPerf Tiny; MobileNetV1-0.25 visual wake words).
Each model is imported for inference and for training (joint forward + backward).

    .venv/bin/python -m instances.extract_models            # all models -> instances/shipped/models/
    .venv/bin/python -m instances.extract_models resnet18 --training-only

Weights are random (seed 0): the graph (operators, sizes, FLOPs, workspace) does
not depend on the weights' values. Needs torch (``pip install 'memsched[torch]'``).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

__all__ = ["MODELS", "build", "extract", "main"]

OUT_DIR = Path(__file__).resolve().parent / "shipped" / "models"


def _nn():
    import torch
    from torch import nn

    return torch, nn


# ----------------------------------------------------------------- ResNet
def resnet(depth: int = 18, num_classes: int = 1000, dilate: tuple[bool, bool, bool] = (False, False, False),
           features_only: bool = False):
    torch, nn = _nn()

    class Basic(nn.Module):
        expansion = 1

        def __init__(self, cin, c, stride, down, dilation=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, c, 3, stride, dilation, dilation, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, 1, dilation, dilation, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.relu = nn.ReLU(inplace=True)
            self.down = down

        def forward(self, x):
            idt = self.down(x) if self.down is not None else x
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + idt)

    class Bottle(nn.Module):
        expansion = 4

        def __init__(self, cin, c, stride, down, dilation=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, c, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, stride, dilation, dilation, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.conv3 = nn.Conv2d(c, c * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(c * 4)
            self.relu = nn.ReLU(inplace=True)
            self.down = down

        def forward(self, x):
            idt = self.down(x) if self.down is not None else x
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return self.relu(y + idt)

    block, layers = {18: (Basic, [2, 2, 2, 2]), 34: (Basic, [3, 4, 6, 3]), 50: (Bottle, [3, 4, 6, 3])}[depth]

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(3, 2, 1))
            cin, dil = 64, 1
            stages = []
            for k, (c, n) in enumerate(zip((64, 128, 256, 512), layers)):
                stride = 1 if k == 0 else 2
                prev_dil = dil
                if k > 0 and dilate[k - 1]:
                    dil *= stride
                    stride = 1
                blocks = []
                for b in range(n):
                    s = stride if b == 0 else 1
                    down = None
                    if b == 0 and (s != 1 or cin != c * block.expansion):
                        down = nn.Sequential(nn.Conv2d(cin, c * block.expansion, 1, s, bias=False),
                                             nn.BatchNorm2d(c * block.expansion))
                    blocks.append(block(cin, c, s, down, prev_dil if b == 0 else dil))
                    cin = c * block.expansion
                stages.append(nn.Sequential(*blocks))
            self.stages = nn.Sequential(*stages)
            self.out_channels = cin
            self.fc = nn.Linear(cin, num_classes)

        def forward(self, x):
            y = self.stages(self.stem(x))
            if features_only:
                return y
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))

    return ResNet()


# ------------------------------------------------------------ MobileNetV2
def mobilenet_v2(num_classes: int = 1000, width: float = 1.0):
    torch, nn = _nn()

    def cbr(cin, cout, k, s, groups=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU6(inplace=True))

    class Inverted(nn.Module):
        def __init__(self, cin, cout, s, t):
            super().__init__()
            hid = cin * t
            layers = [cbr(cin, hid, 1, 1)] if t != 1 else []
            layers += [cbr(hid, hid, 3, s, groups=hid), nn.Conv2d(hid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
            self.body = nn.Sequential(*layers)
            self.res = s == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.res else self.body(x)

    cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    c = lambda v: max(8, int(v * width + 4) // 8 * 8)  # noqa: E731
    layers = [cbr(3, c(32), 3, 2)]
    cin = c(32)
    for t, ch, n, s in cfg:
        for i in range(n):
            layers.append(Inverted(cin, c(ch), s if i == 0 else 1, t))
            cin = c(ch)
    last = max(1280, c(1280))
    layers.append(cbr(cin, last, 1, 1))

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Linear(last, num_classes)

        def forward(self, x):
            y = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
            return self.classifier(torch.flatten(y, 1))

    return MobileNetV2()


# ------------------------------------------------------------ Inception-v3
def inception_v3(num_classes: int = 1000):
    torch, nn = _nn()

    class C(nn.Module):
        def __init__(self, cin, cout, k, s=1, p=0):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, k, s, p, bias=False)
            self.bn = nn.BatchNorm2d(cout, eps=0.001)

        def forward(self, x):
            return nn.functional.relu(self.bn(self.conv(x)))

    def seq(*m):
        return nn.Sequential(*m)

    class Cat(nn.Module):
        def __init__(self, *branches):
            super().__init__()
            self.branches = nn.ModuleList(branches)

        def forward(self, x):
            return torch.cat([b(x) for b in self.branches], 1)

    class Pool(nn.Module):
        def __init__(self, kind, k, s, p=0):
            super().__init__()
            self.kind, self.k, self.s, self.p = kind, k, s, p

        def forward(self, x):
            if self.kind == "avg":
                return nn.functional.avg_pool2d(x, self.k, self.s, self.p)
            return nn.functional.max_pool2d(x, self.k, self.s, self.p)

    def block_a(cin, pool):
        return Cat(C(cin, 64, 1), seq(C(cin, 48, 1), C(48, 64, 5, p=2)),
                   seq(C(cin, 64, 1), C(64, 96, 3, p=1), C(96, 96, 3, p=1)), seq(Pool("avg", 3, 1, 1), C(cin, pool, 1)))

    def block_b(cin):
        return Cat(C(cin, 384, 3, 2), seq(C(cin, 64, 1), C(64, 96, 3, p=1), C(96, 96, 3, 2)), Pool("max", 3, 2))

    def block_c(cin, c7):
        return Cat(C(cin, 192, 1), seq(C(cin, c7, 1), C(c7, c7, (1, 7), p=(0, 3)), C(c7, 192, (7, 1), p=(3, 0))),
                   seq(C(cin, c7, 1), C(c7, c7, (7, 1), p=(3, 0)), C(c7, c7, (1, 7), p=(0, 3)),
                       C(c7, c7, (7, 1), p=(3, 0)), C(c7, 192, (1, 7), p=(0, 3))),
                   seq(Pool("avg", 3, 1, 1), C(cin, 192, 1)))

    def block_d(cin):
        return Cat(seq(C(cin, 192, 1), C(192, 320, 3, 2)),
                   seq(C(cin, 192, 1), C(192, 192, (1, 7), p=(0, 3)), C(192, 192, (7, 1), p=(3, 0)), C(192, 192, 3, 2)),
                   Pool("max", 3, 2))

    class BlockE(nn.Module):
        def __init__(self, cin):
            super().__init__()
            self.b1 = C(cin, 320, 1)
            self.b3 = C(cin, 384, 1)
            self.b3a, self.b3b = C(384, 384, (1, 3), p=(0, 1)), C(384, 384, (3, 1), p=(1, 0))
            self.bd1, self.bd2 = C(cin, 448, 1), C(448, 384, 3, p=1)
            self.bda, self.bdb = C(384, 384, (1, 3), p=(0, 1)), C(384, 384, (3, 1), p=(1, 0))
            self.bp = C(cin, 192, 1)

        def forward(self, x):
            y3 = self.b3(x)
            yd = self.bd2(self.bd1(x))
            yp = self.bp(nn.functional.avg_pool2d(x, 3, 1, 1))
            return torch.cat([self.b1(x), self.b3a(y3), self.b3b(y3), self.bda(yd), self.bdb(yd), yp], 1)

    class InceptionV3(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = seq(C(3, 32, 3, 2), C(32, 32, 3), C(32, 64, 3, p=1), Pool("max", 3, 2), C(64, 80, 1),
                            C(80, 192, 3), Pool("max", 3, 2))
            self.body = seq(block_a(192, 32), block_a(256, 64), block_a(288, 64), block_b(288),
                            block_c(768, 128), block_c(768, 160), block_c(768, 160), block_c(768, 192),
                            block_d(768), BlockE(1280), BlockE(2048))
            self.fc = nn.Linear(2048, num_classes)

        def forward(self, x):
            y = nn.functional.adaptive_avg_pool2d(self.body(self.stem(x)), 1)
            return self.fc(torch.flatten(y, 1))

    return InceptionV3()


# ------------------------------------------------------------ DeepLabV3
def deeplab_v3(num_classes: int = 21):
    torch, nn = _nn()
    backbone = resnet(50, dilate=(False, True, True), features_only=True)

    def cbr(cin, cout, k, d=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, padding=0 if k == 1 else d, dilation=d, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class ASPPPool(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv = cbr(cin, cout, 1)

        def forward(self, x):
            y = self.conv(nn.functional.adaptive_avg_pool2d(x, 1))
            return nn.functional.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)

    class DeepLabV3(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = backbone
            self.aspp = nn.ModuleList([cbr(2048, 256, 1), cbr(2048, 256, 3, 12), cbr(2048, 256, 3, 24),
                                       cbr(2048, 256, 3, 36), ASPPPool(2048, 256)])
            self.project = cbr(5 * 256, 256, 1)
            self.head = nn.Sequential(cbr(256, 256, 3), nn.Conv2d(256, num_classes, 1))

        def forward(self, x):
            f = self.backbone(x)
            y = self.project(torch.cat([a(f) for a in self.aspp], 1))
            y = self.head(y)
            return nn.functional.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)

    return DeepLabV3()


# ------------------------------------------------------------------ U-Net
def unet(channels: int = 3, classes: int = 2, base: int = 32, depth: int = 4):
    torch, nn = _nn()

    def double(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                             nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            chs = [base * 2 ** k for k in range(depth + 1)]
            self.down = nn.ModuleList([double(channels, chs[0])] + [double(chs[k], chs[k + 1]) for k in range(depth)])
            self.up = nn.ModuleList([nn.ConvTranspose2d(chs[k + 1], chs[k], 2, 2) for k in reversed(range(depth))])
            self.dec = nn.ModuleList([double(chs[k] * 2, chs[k]) for k in reversed(range(depth))])
            self.out = nn.Conv2d(chs[0], classes, 1)

        def forward(self, x):
            skips = []
            for k, d in enumerate(self.down):
                x = d(x if k == 0 else nn.functional.max_pool2d(x, 2))
                skips.append(x)
            skips.pop()
            for up, dec in zip(self.up, self.dec):
                x = dec(torch.cat([skips.pop(), up(x)], 1))
            return self.out(x)

    return UNet()


# ------------------------------------------------------------ transformer
def transformer_block(d_model: int = 512, heads: int = 8, ff: int = 2048):
    torch, nn = _nn()

    class Block(nn.Module):
        """Pre-norm transformer encoder block: x + MHA(LN(x)); x + MLP(LN(x))."""

        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.proj = nn.Linear(d_model, d_model)
            self.fc1, self.fc2 = nn.Linear(d_model, ff), nn.Linear(ff, d_model)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).reshape(b, t, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-2, -1) * (c // heads) ** -0.5, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, c)
            x = x + self.proj(y)
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))

    return Block()


# ---------------------------------------------------------- microcontroller
def ds_cnn(classes: int = 12):
    """DS-CNN keyword spotting (MLPerf Tiny): 49x10 MFCC input, 64 channels, 4 DW-separable blocks."""
    torch, nn = _nn()

    def dws(c):
        return nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                             nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU())

    class DSCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(1, 64, (10, 4), (2, 2), (5, 1), bias=False), nn.BatchNorm2d(64), nn.ReLU())
            self.blocks = nn.Sequential(*[dws(64) for _ in range(4)])
            self.fc = nn.Linear(64, classes)

        def forward(self, x):
            y = nn.functional.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1)
            return self.fc(torch.flatten(y, 1))

    return DSCNN()


def mobilenet_v1_025(classes: int = 2):
    """MobileNetV1 width 0.25 at 96x96 (MLPerf Tiny visual wake words)."""
    torch, nn = _nn()

    def cbr(cin, cout, s, dw):
        return nn.Sequential(nn.Conv2d(cin, cout, 3 if dw or cin == 3 else 1, s, 1 if dw or cin == 3 else 0,
                                       groups=cin if dw else 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    cfg = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    layers = [cbr(3, 8, 2, False)]
    cin = 8
    for c, s in cfg:
        c = c // 4
        layers += [cbr(cin, cin, s, True), cbr(cin, c, 1, False)]
        cin = c

    class MobileNetV1(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            y = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
            return self.fc(torch.flatten(y, 1))

    return MobileNetV1()


# name -> (builder, input shape); batch 1 everywhere
MODELS = {
    "resnet18": (lambda: resnet(18), (1, 3, 224, 224)),
    "resnet50": (lambda: resnet(50), (1, 3, 224, 224)),
    "inception_v3": (inception_v3, (1, 3, 299, 299)),
    "deeplabv3": (deeplab_v3, (2, 3, 160, 160)),  # batch 2: training BN needs > 1 value per channel
    "unet": (unet, (1, 3, 128, 128)),
    "mobilenet_v2": (mobilenet_v2, (1, 3, 224, 224)),
    "transformer_block": (transformer_block, (1, 128, 512)),
    "ds_cnn_kws": (ds_cnn, (1, 1, 49, 10)),
    "mobilenet_v1_025_vww": (mobilenet_v1_025, (1, 3, 96, 96)),
}

_TORCHVISION = {"resnet18": "resnet18", "resnet50": "resnet50", "inception_v3": "inception_v3",
                "deeplabv3": "segmentation.deeplabv3_resnet50", "mobilenet_v2": "mobilenet_v2"}


def build(name: str, torchvision: bool = False):
    """(model, example input) for a model of :data:`MODELS`, seeded."""
    import torch

    torch.manual_seed(0)
    builder, shape = MODELS[name]
    model = None
    if torchvision and name in _TORCHVISION:
        try:
            import torchvision.models as tvm

            fn = tvm
            for part in _TORCHVISION[name].split("."):
                fn = getattr(fn, part)
            model = fn(weights=None, **({"aux_logits": False, "init_weights": False} if name == "inception_v3" else {}))
            if name == "deeplabv3":
                model = _DictOut(model)
        except ImportError:
            model = None
    if model is None:
        model = builder()
    return model, torch.randn(*shape)


class _DictOut:
    """Wrap a torchvision segmentation model (dict output) to return the 'out' tensor."""

    def __new__(cls, m):
        import torch

        class W(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, x):
                return self.m(x)["out"]

        return W()


def extract(name: str, training: bool, out_dir: Path = OUT_DIR, torchvision: bool = False) -> Path:
    from memsched.instances.formats import save_graph
    from memsched.instances.torch_import import import_model

    model, x = build(name, torchvision)
    t0 = time.perf_counter()
    imp = import_model(model, (x,), training=training, name=f"{name}_{'train' if training else 'infer'}")
    g = imp.graph
    g.meta.update({"extracted_by": f"python -m instances.extract_models {name}", "input_shape": list(x.shape),
                   "batch": int(x.shape[0]), "import_s": round(time.perf_counter() - t0, 2)})
    g.meta.pop("input_specs", None)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{g.name}.json"
    save_graph(g, path)
    return path


# ------------------------------------------------------------------ corpus
CORPUS_DIR = Path(__file__).resolve().parent / "shipped" / "corpus"
#: the versions the shipped corpus was captured with (instances/shipped/corpus/README.md)
CORPUS_PINS = {"torch": "2.13.0", "transformers": "5.23.0"}


def _hf(kind: str, **cfg):
    """A Hugging Face ``transformers`` model built from a config (random weights, no
    download), wrapped to take one tensor and return one: the logits or last hidden
    state. Attention is the eager implementation (plain ATen ops); the decoders get an
    all-ones attention mask made inside forward (no data-dependent packed-sequence
    test), BERT no mask (its padding test reads values; no mask means no padding)."""
    import torch
    import transformers as tf

    config_cls, model_cls, out = {
        "gpt2": (tf.GPT2Config, tf.GPT2LMHeadModel, "logits"),
        "bert": (tf.BertConfig, tf.BertForMaskedLM, "logits"),
        "vit": (tf.ViTConfig, tf.ViTModel, "last_hidden_state"),
        "llama": (tf.LlamaConfig, tf.LlamaForCausalLM, "logits"),
    }[kind]
    model = model_cls(config_cls(attn_implementation="eager", **cfg))

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, x):
            if kind == "vit":
                return self.m(pixel_values=x).last_hidden_state
            if kind == "bert":  # no mask: BERT's padding-mask test reads the tensor's values
                return self.m(input_ids=x).logits
            return getattr(self.m(input_ids=x, attention_mask=torch.ones_like(x), use_cache=False), out)

    return Wrap()


def _tokens(vocab: int):
    def make(b: int, s: int):
        import torch

        return torch.randint(0, vocab, (b, s))
    return make


def _image(res: int, ch: int = 3):
    def make(b: int, _s: int):
        import torch

        return torch.randn(b, ch, res, res)
    return make


def diffusion_unet(ch: int = 64, mults=(1, 2, 4, 4), attn_levels=(1, 2), groups: int = 8):
    """A diffusion-style U-Net (DDPM / Stable-Diffusion layout, reduced): a sinusoidal time
    embedding fed to every residual block, GroupNorm + SiLU residual blocks, self-attention
    at the lowest resolutions, skip concatenations, two blocks per level. The timestep is
    fixed inside forward (the graph does not depend on its value)."""
    torch, nn = _nn()
    F = nn.functional

    class Res(nn.Module):
        def __init__(self, cin, cout, tdim):
            super().__init__()
            self.n1, self.c1 = nn.GroupNorm(groups, cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.t = nn.Linear(tdim, cout)
            self.n2, self.c2 = nn.GroupNorm(groups, cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else None

        def forward(self, x, temb):
            h = self.c1(F.silu(self.n1(x))) + self.t(temb)[:, :, None, None]
            h = self.c2(F.silu(self.n2(h)))
            return h + (self.skip(x) if self.skip is not None else x)

    class Attn(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n, self.qkv, self.o = nn.GroupNorm(groups, c), nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1)

        def forward(self, x):
            b, c, hh, ww = x.shape
            q, k, v = self.qkv(self.n(x)).reshape(b, 3, c, hh * ww).unbind(1)
            a = torch.softmax(q.transpose(1, 2) @ k * c ** -0.5, dim=-1)
            return x + self.o((v @ a.transpose(1, 2)).reshape(b, c, hh, ww))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            tdim = ch * 4
            self.temb = nn.Sequential(nn.Linear(ch, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
            self.inp = nn.Conv2d(3, ch, 3, padding=1)
            self.down, chans, c = nn.ModuleList(), [ch], ch
            for lvl, m in enumerate(mults):
                for _ in range(2):
                    blk = nn.ModuleList([Res(c, ch * m, tdim)])
                    c = ch * m
                    if lvl in attn_levels:
                        blk.append(Attn(c))
                    self.down.append(blk)
                    chans.append(c)
                if lvl < len(mults) - 1:
                    self.down.append(nn.ModuleList([nn.Conv2d(c, c, 3, 2, 1)]))
                    chans.append(c)
            self.mid = nn.ModuleList([Res(c, c, tdim), Attn(c), Res(c, c, tdim)])
            self.up = nn.ModuleList()
            for lvl, m in reversed(list(enumerate(mults))):
                for _ in range(3):
                    blk = nn.ModuleList([Res(c + chans.pop(), ch * m, tdim)])
                    c = ch * m
                    if lvl in attn_levels:
                        blk.append(Attn(c))
                    self.up.append(blk)
                if lvl > 0:
                    self.up.append(nn.ModuleList([nn.Upsample(scale_factor=2), nn.Conv2d(c, c, 3, padding=1)]))
            self.out = nn.Sequential(nn.GroupNorm(groups, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))

        def forward(self, x):
            half = ch // 2
            t = torch.full((x.shape[0], 1), 500.0)
            freqs = torch.exp(-torch.arange(half, dtype=torch.float32) * (9.21 / half))
            temb = self.temb(torch.cat([torch.sin(t * freqs), torch.cos(t * freqs)], 1))

            def run(blk, h):
                for mod in blk:
                    h = mod(h, temb) if isinstance(mod, Res) else mod(h)
                return h

            h = self.inp(x)
            hs = [h]
            for blk in self.down:
                h = run(blk, h)
                hs.append(h)
            h = run(self.mid, h)
            for blk in self.up:
                if isinstance(blk[0], Res):
                    h = torch.cat([h, hs.pop()], 1)
                h = run(blk, h)
            return self.out(h)

    return UNet()


def mobilenet_v3_large(num_classes: int = 1000):
    """MobileNetV3-Large (Howard et al. 2019, table 1): inverted residuals with
    squeeze-and-excitation and hard-swish."""
    torch, nn = _nn()

    def cbn(cin, cout, k, s, groups=1, act=None):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act is not None:
            layers.append(act())
        return nn.Sequential(*layers)

    def mk(v, d=8):
        return max(d, int(v + d / 2) // d * d)

    class SE(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.f1, self.f2 = nn.Conv2d(c, mk(c // 4), 1), nn.Conv2d(mk(c // 4), c, 1)

        def forward(self, x):
            s = nn.functional.adaptive_avg_pool2d(x, 1)
            return x * nn.functional.hardsigmoid(self.f2(nn.functional.relu(self.f1(s))))

    class Block(nn.Module):
        def __init__(self, cin, k, exp, cout, se, act, s):
            super().__init__()
            layers = [] if exp == cin else [cbn(cin, exp, 1, 1, act=act)]
            layers.append(cbn(exp, exp, k, s, groups=exp, act=act))
            if se:
                layers.append(SE(exp))
            layers.append(cbn(exp, cout, 1, 1))
            self.body = nn.Sequential(*layers)
            self.res = s == 1 and cin == cout

        def forward(self, x):
            y = self.body(x)
            return x + y if self.res else y

    RE, HS = nn.ReLU, nn.Hardswish
    cfg = [(16, 3, 16, 16, False, RE, 1), (16, 3, 64, 24, False, RE, 2), (24, 3, 72, 24, False, RE, 1),
           (24, 5, 72, 40, True, RE, 2), (40, 5, 120, 40, True, RE, 1), (40, 5, 120, 40, True, RE, 1),
           (40, 3, 240, 80, False, HS, 2), (80, 3, 200, 80, False, HS, 1), (80, 3, 184, 80, False, HS, 1),
           (80, 3, 184, 80, False, HS, 1), (80, 3, 480, 112, True, HS, 1), (112, 3, 672, 112, True, HS, 1),
           (112, 5, 672, 160, True, HS, 2), (160, 5, 960, 160, True, HS, 1), (160, 5, 960, 160, True, HS, 1)]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = cbn(3, 16, 3, 2, act=HS)
            self.blocks = nn.Sequential(*[Block(*c) for c in cfg])
            self.last = cbn(160, 960, 1, 1, act=HS)
            self.head = nn.Sequential(nn.Linear(960, 1280), nn.Hardswish(), nn.Linear(1280, num_classes))

        def forward(self, x):
            x = self.last(self.blocks(self.stem(x)))
            return self.head(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))

    return Net()


#: corpus name -> (builder, input maker (batch, seq) -> tensor, [(batch, seq), (batch, seq)]).
#: For image models seq is unused (0). Training steps only (joint forward + backward).
CORPUS = {
    "gpt2_small": (lambda: _hf("gpt2", n_layer=12, n_embd=768, n_head=12), _tokens(50257), [(1, 128), (2, 256)]),
    "gpt2_medium": (lambda: _hf("gpt2", n_layer=24, n_embd=1024, n_head=16), _tokens(50257), [(1, 128), (2, 256)]),
    "bert_base": (lambda: _hf("bert"), _tokens(30522), [(1, 128), (2, 256)]),
    "vit_b16": (lambda: _hf("vit"), _image(224), [(1, 0), (4, 0)]),
    "llama_8l": (lambda: _hf("llama", hidden_size=512, intermediate_size=1376, num_hidden_layers=8,
                             num_attention_heads=8, num_key_value_heads=8, vocab_size=32000,
                             max_position_embeddings=1024), _tokens(32000), [(1, 128), (2, 256)]),
    # the >= 1,000-operator members (issue 17): deeper / wider configurations of the same families
    "llama_16l": (lambda: _hf("llama", hidden_size=512, intermediate_size=1376, num_hidden_layers=16,
                              num_attention_heads=8, num_key_value_heads=8, vocab_size=32000,
                              max_position_embeddings=1024), _tokens(32000), [(1, 128), (2, 256)]),
    "llama_48l": (lambda: _hf("llama", hidden_size=512, intermediate_size=1376, num_hidden_layers=48,
                              num_attention_heads=8, num_key_value_heads=8, vocab_size=32000,
                              max_position_embeddings=1024), _tokens(32000), [(1, 128), (2, 256)]),
    "gpt2_large": (lambda: _hf("gpt2", n_layer=36, n_embd=1280, n_head=20), _tokens(50257), [(1, 64), (1, 128)]),
    "bert_large": (lambda: _hf("bert", hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                               intermediate_size=4096), _tokens(30522), [(1, 128), (2, 256)]),
    "vit_l16": (lambda: _hf("vit", hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                            intermediate_size=4096), _image(224), [(1, 0), (4, 0)]),
    "resnet50": (lambda: resnet(50), _image(224), [(2, 0), (8, 0)]),
    "diffusion_unet": (diffusion_unet, _image(32), [(2, 0), (8, 0)]),
    "mobilenet_v3_large": (mobilenet_v3_large, _image(224), [(2, 0), (8, 0)]),
}


def corpus_path(name: str, batch: int, seq: int, out_dir: Path = CORPUS_DIR) -> Path:
    return out_dir / f"{name}_b{batch}{f'_s{seq}' if seq else ''}_train.json.gz"


def extract_corpus(name: str, batch: int, seq: int, out_dir: Path = CORPUS_DIR) -> Path:
    """Capture the training step of corpus model ``name`` at (batch, seq) into
    ``out_dir`` as gzip-compressed memsched-graph JSON, with provenance in ``meta``."""
    import platform

    import torch

    from memsched.instances.formats import save_graph
    from memsched.instances.torch_import import import_model

    builder, make_input, _ = CORPUS[name]
    torch.manual_seed(0)
    model = builder()
    x = make_input(batch, seq)
    t0 = time.perf_counter()
    gname = corpus_path(name, batch, seq).name[: -len(".json.gz")]
    imp = import_model(model, (x,), training=True, name=gname)
    g = imp.graph
    versions = {"torch": torch.__version__.split("+")[0], "python": platform.python_version()}
    try:
        import transformers

        versions["transformers"] = transformers.__version__
    except ImportError:
        pass
    g.meta.update({"extracted_by": f"python -m memsched.instances.extract_models --corpus {name}",
                   "model": name, "batch": batch, "seq": seq or None, "input_shape": list(x.shape),
                   "versions": versions, "weights": "random (seed 0), no download",
                   "import_s": round(time.perf_counter() - t0, 2)})
    g.meta.pop("input_specs", None)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = corpus_path(name, batch, seq, out_dir)
    save_graph(g, path)
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m instances.extract_models", description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", help=f"default: all of {', '.join(MODELS)}")
    p.add_argument("--inference-only", action="store_true")
    p.add_argument("--training-only", action="store_true")
    p.add_argument("--torchvision", action="store_true", help="take the model from torchvision where installed")
    p.add_argument("--corpus", action="store_true",
                   help=f"capture the training-step corpus instead ({', '.join(CORPUS)}) into instances/shipped/corpus/")
    p.add_argument("-o", "--out-dir", default=None)
    args = p.parse_args(argv)
    if args.corpus:
        names = args.models or list(CORPUS)
        for n in names:
            if n not in CORPUS:
                print(f"extract_models: unknown corpus model {n!r}; valid: {', '.join(CORPUS)}", file=sys.stderr)
                return 2
        for n in names:
            for b, s in CORPUS[n][2]:
                t0 = time.perf_counter()
                path = extract_corpus(n, b, s, Path(args.out_dir or CORPUS_DIR))
                print(f"{path}  ({time.perf_counter() - t0:.1f} s)", flush=True)
        return 0
    args.out_dir = args.out_dir or str(OUT_DIR)
    names = args.models or list(MODELS)
    for n in names:
        if n not in MODELS:
            print(f"extract_models: unknown model {n!r}; valid: {', '.join(MODELS)}", file=sys.stderr)
            return 2
    modes = [False] if args.inference_only else [True] if args.training_only else [False, True]
    for n in names:
        for tr in modes:
            t0 = time.perf_counter()
            path = extract(n, tr, Path(args.out_dir), args.torchvision)
            print(f"{path}  ({time.perf_counter() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
