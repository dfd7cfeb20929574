"""PyTorch twins of the zoo models in models/zoo.cc, layer for layer.

    from zoo_torch import zoo_model, zoo_input_shape
    model = zoo_model("transformer")          # an nn.Module
    x = torch.randn(8, *zoo_input_shape("transformer"))

Used by bench/train_vs_torch.py, bench/train_vs_torch_amp.py and the zoo tests that compare our
forward pass with PyTorch's (tests/models/transformer_test.cc). The transformer's and the
ResNet's parameter names are the zoo's initializer names, so the zoo's weights load into these
by name (`load_zoo_weights`). Initialisation is PyTorch's own; for timing it does not matter.
"""

import torch
import torch.nn as nn

# Per-sample input shape and class count of each zoo model (models/zoo.h).
SHAPES = {
    "mlp": ((1, 28, 28), 10),
    "lenet5": ((1, 28, 28), 10),
    "resnet18": ((3, 224, 224), 1000),
    "resnet18-cifar": ((3, 32, 32), 10),
    "transformer": ((28, 28), 10),
    "lstm": ((28, 28), 10),
    "mlp-wide": ((1, 28, 28), 10),
    "transformer-base": ((128, 768), 10),
}


class Lstm(nn.Module):
    """models::lstm: nn.LSTM(batch_first) -> the last step's output -> fc. The zoo's defaults read
    a 28x28 image as 28 steps of 28 values."""

    def __init__(self, d_in=28, hidden=128, layers=2, num_classes=10):
        super().__init__()
        self.lstm = nn.LSTM(d_in, hidden, num_layers=layers, batch_first=True)
        self.fc = nn.Linear(hidden, num_classes)

    def forward(self, x):
        h, _ = self.lstm(x)
        return self.fc(h[:, -1])


class Transformer(nn.Module):
    """models::transformer: input_proj + pos_embedding -> nn.TransformerEncoder (post-norm, ReLU,
    no dropout) -> mean over the sequence -> fc. The zoo's defaults read a 28x28 image as 28
    tokens of 28 values."""

    def __init__(self, seq_len=28, d_in=28, d_model=128, heads=4, layers=2, ff=512, num_classes=10):
        super().__init__()
        self.input_proj = nn.Linear(d_in, d_model)
        self.pos_embedding = nn.Parameter(torch.randn(seq_len, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, activation="relu",
                                           batch_first=True)
        # No nested-tensor fast path: the same arithmetic in train and eval mode.
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.fc = nn.Linear(d_model, num_classes)

    def forward(self, x):
        h = self.encoder(self.input_proj(x) + self.pos_embedding)
        return self.fc(h.mean(dim=1))


def zoo_model(name):
    """The PyTorch twin of zoo model `name` (ResNet-18 needs torchvision)."""
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                             nn.ReLU(), nn.Linear(128, 10))
    if name in ("lenet5", "lenet-5"):
        return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                             nn.Linear(84, 10))
    if name in ("resnet18", "resnet18-cifar"):
        import torchvision  # the zoo's ResNet-18 is torchvision's (tests/models/zoo_test.cc)
        return torchvision.models.resnet18(num_classes=SHAPES[name][1])
    if name == "transformer":
        return Transformer()
    if name == "mlp-wide":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 4096), nn.ReLU(), nn.Linear(4096, 4096),
                             nn.ReLU(), nn.Linear(4096, 10))
    if name == "transformer-base":
        return Transformer(seq_len=128, d_in=768, d_model=768, heads=12, layers=2, ff=3072)
    if name == "lstm":
        return Lstm()
    raise SystemExit(f"no PyTorch twin for zoo model '{name}' (known: {', '.join(SHAPES)})")


def zoo_input_shape(name):
    """Per-sample input shape, e.g. (3, 32, 32)."""
    return SHAPES["lenet5" if name == "lenet-5" else name][0]


def load_zoo_weights(model, arrays):
    """Loads {initializer name: numpy array} into `model` by state_dict key; every key but
    BatchNorm's num_batches_tracked must be given, and no other. Returns the model."""
    sd = model.state_dict()
    theirs = {k for k in sd if not k.endswith("num_batches_tracked")}
    if set(arrays) != theirs:
        raise ValueError(f"names differ: only ours {sorted(set(arrays) - theirs)[:5]}, only "
                         f"PyTorch's {sorted(theirs - set(arrays))[:5]}")
    for k in theirs:
        if tuple(arrays[k].shape) != tuple(sd[k].shape):
            raise ValueError(f"{k}: ours {tuple(arrays[k].shape)}, PyTorch's {tuple(sd[k].shape)}")
        sd[k] = torch.from_numpy(arrays[k])
    model.load_state_dict(sd)
    return model
