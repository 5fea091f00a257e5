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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m instances.extract_models", description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", help=f"default: all of {', '.join(MODELS)}")
    p.add_argument("--inference-only", action="store_true")
    p.add_argument("--training-only", action="store_true")
    p.add_argument("--torchvision", action="store_true", help="take the model from torchvision where installed")
    p.add_argument("-o", "--out-dir", default=str(OUT_DIR))
    args = p.parse_args(argv)
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
