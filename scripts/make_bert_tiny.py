#!/usr/bin/python3
"""A tiny BERT-like classifier with three inputs, and .npy data for a learnable task.

usage: make_bert_tiny.py OUT_DIR [N_TRAIN N_VAL]

Model (torch.onnx, opset 17, dynamic batch, T = 8):
  input_ids int64 [N, T], attention_mask int64 [N, T], token_type_ids int64 [N, T]
  -> token + position + token-type embeddings (d 16) -> LayerNorm
  -> nn.TransformerEncoder (1 layer, 2 heads, ff 32, batch_first) with
     src_key_padding_mask = (attention_mask == 0)
  -> Linear on the first token -> logits [N, 2]
Task: each sample has a length L in [3, T]; positions >= L are padding (id 0, mask 0); position 0
is a [CLS] id 1; the other ids are uniform in [2, 20). label = 1 when more than half of the ids
at positions 1..L-1 are >= 11. token_type_ids are 0 before L // 2 and 1 after (like a sentence
pair). Writes bert_tiny.onnx, bert_tiny_dynseq.onnx (the same model exported with a symbolic
sequence axis too, as Hugging Face exports are) and {train,val}_{ids,mask,types,labels}.npy.
"""
import os
import sys

import numpy as np
import torch
from torch import nn

VOCAB, T, D, HEADS, FF, CLASSES = 20, 8, 16, 2, 32, 2


class TinyBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(T, D)
        self.typ = nn.Embedding(2, D)
        self.norm = nn.LayerNorm(D)
        layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(D, CLASSES)

    def forward(self, input_ids, attention_mask, token_type_ids):
        pos = torch.arange(input_ids.shape[1], dtype=torch.long).unsqueeze(0)
        h = self.tok(input_ids) + self.pos(pos) + self.typ(token_type_ids)
        h = self.enc(self.norm(h), src_key_padding_mask=attention_mask == 0)
        return self.head(h[:, 0])


def data(n, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, VOCAB, size=(n, T)).astype(np.int64)
    ids[:, 0] = 1
    lengths = rng.integers(3, T + 1, size=n)
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.int64)
    ids[mask == 0] = 0
    types = (np.arange(T)[None, :] >= (lengths // 2)[:, None]).astype(np.int64) * mask
    big = ((ids >= 11) & (mask == 1)).sum(1)
    labels = (2 * big > (lengths - 1)).astype(np.int64)
    return ids, mask, types, labels


def main():
    out = sys.argv[1]
    n_train = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    n_val = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = TinyBert().eval()
    ids, mask, types, _ = data(2, 99)
    args = tuple(torch.from_numpy(a) for a in (ids, mask, types))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    # Not under torch.no_grad(): there the encoder layer takes its fused fast path, which
    # torch.onnx cannot export.
    for file, axes in (("bert_tiny.onnx", {0: "batch"}),
                       ("bert_tiny_dynseq.onnx", {0: "batch", 1: "sequence"})):
        torch.onnx.export(model, args, os.path.join(out, file), opset_version=17,
                          input_names=names, output_names=["logits"], do_constant_folding=True,
                          dynamic_axes={**{k: axes for k in names}, "logits": {0: "batch"}})
    for split, n, seed in (("train", n_train, 1), ("val", n_val, 2)):
        for key, arr in zip(("ids", "mask", "types", "labels"), data(n, seed)):
            np.save(os.path.join(out, f"{split}_{key}.npy"), arr)


if __name__ == "__main__":
    main()
