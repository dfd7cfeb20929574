#!/usr/bin/env python3
"""Tiny Hugging Face transformers models exported by torch.onnx, for tests/models/hf_export_test.cc.

    /tmp/hfenv/bin/python scripts/make_hf_fixtures.py [OUT]      (OUT: tests/data/hf)

Needs torch (Debian's python3-torch 1.13) and transformers 4.36 in one interpreter, e.g. a venv
over Debian's Python: `/usr/bin/python3 -m venv --system-site-packages /tmp/hfenv &&
/tmp/hfenv/bin/pip install transformers==4.36.2 onnxruntime`. The tests do NOT need any of them:
the files this writes are committed and the tests only read them. Rerun it (and commit the
result) only to change the fixtures.

Each model is built from a small config with torch.manual_seed(0), put in eval mode (no
dropout: training then follows the same math on both sides) and exported at opset 17 with
do_constant_folding=False and a dynamic batch. For each NAME it writes

    NAME.onnx            the export (wrapping the model so its first output is the logits)
    NAME_x.npy           int64 token ids [64, 16]; NAME_mask.npy the attention mask when the
                         model takes one (a third of the rows padded after position 10)
    NAME_y.npy           labels: the next token (-100 at the last position) for the causal LMs,
                         a class in [0, 3) for the classifier
    NAME_ort_output.npy  ONNX Runtime's logits on the first 4 rows (CPU provider)
    NAME_torch.json      PyTorch's own run from the same weights: Adam(lr 1e-3, eps 1e-8), batch
                         8, 8 steps over the rows in order, F.cross_entropy with ignore_index
                         -100 over the flattened positions; "loss" holds the 8 step losses

The cases:

  gpt2   GPT2LMHeadModel: Conv1D layers exported as Gemm, the causal mask built from Trilu-free
         index arithmetic, tanh-GELU, and lm_head TIED to the token embedding (one initializer
         read by a Gather and a MatMul): training must keep it one parameter, as PyTorch does.
  llama  LlamaForCausalLM: RMSNorm as Pow/ReduceMean/Sqrt/Div, rotary embeddings (Cos/Sin
         tables, Slice/Concat/Neg), SiLU-gated MLP, an untied lm_head.
  bert   BertForSequenceClassification with an attention mask (an int64 second input whose
         padding becomes an additive -large bias), pooler Tanh, erf-GELU.
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort
import torch
from transformers import (BertConfig, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel,
                          LlamaConfig, LlamaForCausalLM)

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'tests',
                                                          'data', 'hf')
N, T, VOCAB, STEPS, BATCH = 64, 16, 64, 8, 8


class Logits(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, *a):
        return self.m(*a, return_dict=False)[0]


def build(name):
    torch.manual_seed(0)
    if name == 'gpt2':
        return Logits(GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32,
                                                 n_layer=2, n_head=2))), False
    if name == 'llama':
        return Logits(LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=32,
                                                   intermediate_size=64, num_hidden_layers=2,
                                                   num_attention_heads=2,
                                                   max_position_embeddings=32))), False
    return Logits(BertForSequenceClassification(BertConfig(
        vocab_size=VOCAB, max_position_embeddings=32, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, num_labels=3))), True


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(0)
    ids = rng.randint(0, VOCAB, (N, T)).astype(np.int64)
    mask = np.ones((N, T), np.int64)
    mask[::3, 10:] = 0
    for name in ('gpt2', 'llama', 'bert'):
        m, takes_mask = build(name)
        m.eval()
        path = os.path.join(OUT, name + '.onnx')
        args = (torch.tensor(ids[:4]), torch.tensor(mask[:4])) if takes_mask else (torch.tensor(ids[:4]),)
        names = ['input_ids', 'attention_mask'] if takes_mask else ['input_ids']
        dyn = {n: {0: 'N'} for n in names}
        dyn['logits'] = {0: 'N'}
        torch.onnx.export(m, args, path, opset_version=17, input_names=names,
                          output_names=['logits'], dynamic_axes=dyn, do_constant_folding=False)
        sess = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
        feeds = {'input_ids': ids[:4]}
        if takes_mask:
            feeds['attention_mask'] = mask[:4]
        np.save(os.path.join(OUT, name + '_ort_output.npy'), sess.run(None, feeds)[0])
        if takes_mask:
            y = (ids[:, 0] % 3).astype(np.int64)
            np.save(os.path.join(OUT, name + '_mask.npy'), mask)
        else:
            y = np.roll(ids, -1, 1)
            y[:, -1] = -100
        np.save(os.path.join(OUT, name + '_x.npy'), ids)
        np.save(os.path.join(OUT, name + '_y.npy'), y)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        losses = []
        for s in range(STEPS):
            sl = slice(s * BATCH, (s + 1) * BATCH)
            a = (torch.tensor(ids[sl]), torch.tensor(mask[sl])) if takes_mask else (torch.tensor(ids[sl]),)
            out = m(*a)
            loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]),
                                                     torch.tensor(y[sl]).reshape(-1),
                                                     ignore_index=-100)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        with open(os.path.join(OUT, name + '_torch.json'), 'w') as f:
            json.dump({'model': name, 'transformers': __import__('transformers').__version__,
                       'torch': torch.__version__, 'optimizer': 'adam', 'lr': 1e-3, 'eps': 1e-8,
                       'batch': BATCH, 'steps': STEPS, 'loss': losses}, f, indent=1)
        print(name, os.path.getsize(path), 'bytes; torch losses', ' '.join(f'{v:.5f}' for v in losses))


if __name__ == '__main__':
    main()
