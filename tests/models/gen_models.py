#!/usr/bin/python3
"""Generate test models in the ONNX backend-test layout.

For every model this writes

    OUT/<name>/model.onnx
    OUT/<name>/test_data_set_0/input_0.pb ...   (onnx TensorProto, name = graph input name)
    OUT/<name>/test_data_set_0/output_0.pb ...  (onnx TensorProto, name = graph output name)
    OUT/<name>/gen_stamp.json                   (generator version + summary; used to skip)

The reference outputs are PyTorch's own outputs (model.eval(), torch.no_grad())
on the same inputs that are written to input_*.pb.

Everything is deterministic: weights come from torch.manual_seed(<per-model
seed>), inputs from a separate fixed-seed generator.  Nothing is downloaded:
torchvision models are built with weights=None.

Run with Debian's interpreter (torch/onnx are installed as Debian packages):

    /usr/bin/python3 tests/models/gen_models.py --out /tmp/smelt_models
    /usr/bin/python3 tests/models/gen_models.py --out DIR --only resnet18,bert_tiny_like
    /usr/bin/python3 tests/models/gen_models.py --list
"""

import argparse
import collections
import hashlib
import json
import math
import os
import shutil
import sys
import time
import zlib

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

# Bump whenever a model definition, seed, init scheme or export option changes:
# it invalidates every previously generated folder. (The stamp also holds a
# hash of this file, so any edit regenerates; the version is for humans.)
GEN_VERSION = 1

STAMP_FILE = "gen_stamp.json"


# --------------------------------------------------------------------------
# Shared helpers (also used by gen_tiny_cnn.py)
# --------------------------------------------------------------------------

def name_seed(name):
    """A stable per-model seed so a model does not depend on which others run."""
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def randomize_norm_layers(model, gen, conv_linear_bias=False):
    """Give every BatchNorm/LayerNorm a non-trivial affine transform.

    Default init (gamma=1, beta=0, mean=0, var=1) makes BN an identity, which
    would hide bugs in how a compiler applies or folds it. With
    conv_linear_bias, Conv/Linear biases (zero-initialised by most torchvision
    models) get small random values too, so a dropped bias shows up.
    """
    with torch.no_grad():
        for m in model.modules():
            if conv_linear_bias and isinstance(m, (nn.modules.conv._ConvNd, nn.Linear)):
                if m.bias is not None:
                    m.bias.copy_(torch.empty_like(m.bias).normal_(0.0, 0.1, generator=gen))
            if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(torch.empty_like(m.weight).uniform_(0.7, 1.3, generator=gen))
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_(torch.empty_like(m.bias).normal_(0.0, 0.1, generator=gen))


def calibrate_batchnorm(model, make_batch, steps=1):
    """Set BN running statistics to those of the activations on random data.

    Only BN layers are put in train mode (dropout etc. stay in eval); momentum
    None gives a plain cumulative average. Keeps activations of deep, randomly
    initialised nets at a sane scale and makes mean/var per-channel non-trivial.
    """
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    model.eval()
    saved = []
    for m in bns:
        saved.append(m.momentum)
        m.reset_running_stats()
        m.momentum = None
        m.train()
    with torch.no_grad():
        for _ in range(steps):
            model(make_batch())
    for m, mom in zip(bns, saved):
        m.momentum = mom
    model.eval()


def _flatten_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(_flatten_outputs(o))
        return res
    raise TypeError("unsupported model output type %r" % type(out))


def _graph_input_names(model_proto):
    inits = {i.name for i in model_proto.graph.initializer}
    return [i.name for i in model_proto.graph.input if i.name not in inits]


def _write_tensor(path, arr, name):
    t = onnx.numpy_helper.from_array(np.ascontiguousarray(arr), name=name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def op_counts(model_proto):
    """Op type -> count, over the main graph and any subgraphs."""
    counts = collections.Counter()

    def walk(graph):
        for n in graph.node:
            key = n.op_type if n.domain in ("", "ai.onnx") else "%s:%s" % (n.domain, n.op_type)
            counts[key] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for g in a.graphs:
                        walk(g)

    walk(model_proto.graph)
    return dict(sorted(counts.items()))


def model_opset(model_proto):
    for o in model_proto.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return None


def export_case(model, inputs, input_names, output_names, opset, case_dir,
                constant_folding=True, training=torch.onnx.TrainingMode.EVAL,
                dynamic_axes=None):
    """Export `model` to case_dir/model.onnx and write test_data_set_0.

    `inputs` is a tuple of tensors, in graph-input order. Returns a summary
    dict (opset, op counts, input/output names and shapes).

    Note: with training=EVAL the exporter fuses Conv+BatchNormalization even
    when constant_folding is False; pass TrainingMode.PRESERVE (the model is in
    eval mode anyway) to keep BatchNormalization nodes.
    """
    model.eval()
    os.makedirs(os.path.join(case_dir, "test_data_set_0"), exist_ok=True)
    model_path = os.path.join(case_dir, "model.onnx")

    with torch.no_grad():
        ref = _flatten_outputs(model(*inputs))
    if len(ref) != len(output_names):
        raise RuntimeError("model returned %d outputs, %d names given"
                           % (len(ref), len(output_names)))
    ref = [r.detach().cpu().numpy() for r in ref]

    with torch.no_grad():
        torch.onnx.export(
            model, tuple(inputs), model_path,
            export_params=True,
            opset_version=opset,
            do_constant_folding=constant_folding,
            input_names=list(input_names),
            output_names=list(output_names),
            dynamic_axes=dynamic_axes,
            training=training,
        )

    proto = onnx.load(model_path)
    onnx.checker.check_model(proto)
    got_in = _graph_input_names(proto)
    got_out = [o.name for o in proto.graph.output]
    if got_in != list(input_names):
        raise RuntimeError("graph inputs %r != expected %r (an input unused by the "
                           "model gets dropped by the exporter)" % (got_in, list(input_names)))
    if got_out != list(output_names):
        raise RuntimeError("graph outputs %r != expected %r" % (got_out, list(output_names)))

    data_dir = os.path.join(case_dir, "test_data_set_0")
    for i, (name, t) in enumerate(zip(input_names, inputs)):
        _write_tensor(os.path.join(data_dir, "input_%d.pb" % i), t.detach().cpu().numpy(), name)
    for i, (name, arr) in enumerate(zip(output_names, ref)):
        _write_tensor(os.path.join(data_dir, "output_%d.pb" % i), arr, name)

    return {
        "opset": model_opset(proto),
        "ops": op_counts(proto),
        "inputs": [[n, list(t.shape), str(t.dtype).replace("torch.", "")]
                   for n, t in zip(input_names, inputs)],
        "outputs": [[n, list(a.shape), str(a.dtype)] for n, a in zip(output_names, ref)],
        "model_bytes": os.path.getsize(model_path),
    }


# --------------------------------------------------------------------------
# Transformer-like models written with torch.nn
# --------------------------------------------------------------------------

def init_transformer_weights(model, gen):
    """Weights with a scale that gives non-uniform attention and O(1) activations."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                m.weight.copy_(torch.empty_like(m.weight).normal_(
                    0.0, 1.0 / math.sqrt(m.in_features), generator=gen))
                if m.bias is not None:
                    m.bias.copy_(torch.empty_like(m.bias).normal_(0.0, 0.1, generator=gen))
            elif isinstance(m, nn.Embedding):
                m.weight.copy_(torch.empty_like(m.weight).normal_(0.0, 1.0, generator=gen))
    randomize_norm_layers(model, gen)


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        assert hidden % heads == 0
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x, mask):
        b, s, h = x.shape  # static under tracing with fixed input shapes

        def split(t):
            return t.reshape(b, s, self.heads, self.head_dim).transpose(1, 2)

        q = split(self.query(x))
        k = split(self.key(x))
        v = split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + mask                      # additive mask, [b,1,1,s]
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h)
        return self.out(ctx)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attn = BertSelfAttention(hidden, heads)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.fc1 = nn.Linear(hidden, ffn)
        self.act = nn.GELU()  # exact (erf)
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask):
        x = self.ln1(x + self.attn(x, mask))       # post-LN, as in BERT
        x = self.ln2(x + self.fc2(self.act(self.fc1(x))))
        return x


class BertLike(nn.Module):
    """BERT-style encoder: inputs int64 ids [1,S] and float additive mask [1,1,1,S].

    Outputs: last hidden state [1,S,H] and pooled output tanh(W h[:,0]) [1,H].
    """

    def __init__(self, vocab, max_pos, hidden, heads, layers, ffn):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0), persistent=False)
        self.emb_ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(hidden, heads, ffn) for _ in range(layers)])
        self.pool = nn.Linear(hidden, hidden)

    def forward(self, ids, mask):
        s = ids.shape[1]
        x = self.word(ids) + self.pos(self.position_ids[:, :s])
        x = self.emb_ln(x)
        for layer in self.layers:
            x = layer(x, mask)
        pooled = torch.tanh(self.pool(x[:, 0]))
        return x, pooled


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, hidden, heads, max_pos):
        super().__init__()
        self.hidden = hidden
        self.heads = heads
        self.head_dim = hidden // heads
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        causal = torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, max_pos, max_pos), persistent=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.c_attn(x).split(self.hidden, dim=2)

        def split(t):
            return t.reshape(b, s, self.heads, self.head_dim).transpose(1, 2)

        q, k, v = split(q), split(k), split(v)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        keep = self.causal[:, :, :s, :s]
        scores = scores.masked_fill(~keep, -1e4)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h)
        return self.c_proj(ctx)


class GPT2Block(nn.Module):
    def __init__(self, hidden, heads, max_pos):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden)
        self.attn = GPT2Attention(hidden, heads, max_pos)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.c_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))            # pre-LN, as in GPT-2
        x = x + self.c_proj(gelu_tanh(self.c_fc(self.ln_2(x))))
        return x


class GPT2Like(nn.Module):
    """GPT-2-style decoder: input int64 ids [1,S]; output logits [1,S,vocab] (tied head)."""

    def __init__(self, vocab, max_pos, hidden, heads, layers):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_pos, hidden)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0), persistent=False)
        self.blocks = nn.ModuleList([GPT2Block(hidden, heads, max_pos) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, ids):
        s = ids.shape[1]
        x = self.wte(ids) + self.wpe(self.position_ids[:, :s])
        for blk in self.blocks:
            x = blk(x)
        x = self.ln_f(x)
        return torch.matmul(x, self.wte.weight.t())  # tied LM head


class GPT2Decoder(GPT2Like):
    """GPT2Like (the same parameters) run one token at a time with a key/value
    cache: inputs ids [1, 1], position_ids [1, 1] and per layer past_key_L,
    past_value_L [1, heads, past, head_dim]; outputs logits [1, 1, vocab] and
    present_key_L, present_value_L [1, heads, past + 1, head_dim] (the past
    with this token's keys and values appended).  One query attends to every
    cached key, so there is no causal mask."""

    def forward(self, ids, position_ids, *past):
        x = self.wte(ids) + self.wpe(position_ids)
        presents = []
        for i, blk in enumerate(self.blocks):
            a, k, v = self._attend(blk.attn, blk.ln_1(x), past[2 * i], past[2 * i + 1])
            x = x + a
            x = x + blk.c_proj(gelu_tanh(blk.c_fc(blk.ln_2(x))))
            presents += [k, v]
        logits = torch.matmul(self.ln_f(x), self.wte.weight.t())
        return (logits, *presents)

    @staticmethod
    def _attend(attn, x, past_k, past_v):
        b, s, h = x.shape
        q, k, v = attn.c_attn(x).split(attn.hidden, dim=2)

        def split(t):
            return t.reshape(b, s, attn.heads, attn.head_dim).transpose(1, 2)

        k = torch.cat([past_k, split(k)], dim=2)
        v = torch.cat([past_v, split(v)], dim=2)
        scores = torch.matmul(split(q), k.transpose(-1, -2)) / math.sqrt(attn.head_dim)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h)
        return attn.c_proj(ctx), k, v

    def prefill(self, ids):
        """The full-sequence model on ids [1, S] (causal): its logits
        [1, S, vocab] and the keys and values of every layer, each
        [1, heads, S, head_dim]: the cache a decoder holds after reading them."""
        cache = []
        s = ids.shape[1]
        x = self.wte(ids) + self.wpe(self.position_ids[:, :s])
        for blk in self.blocks:
            attn, h = blk.attn, blk.ln_1(x)
            _, k, v = attn.c_attn(h).split(attn.hidden, dim=2)
            cache += [t.reshape(1, s, attn.heads, attn.head_dim).transpose(1, 2) for t in (k, v)]
            x = x + attn(h)
            x = x + blk.c_proj(gelu_tanh(blk.c_fc(blk.ln_2(x))))
        return (torch.matmul(self.ln_f(x), self.wte.weight.t()), *cache)

    def cache_after(self, ids):
        return list(self.prefill(ids)[1:])


class GPT2Prefill(nn.Module):
    """A GPT2Decoder's full-sequence model for export: ids [1, seq] ->
    logits [1, seq, vocab] and present_key_L, present_value_L."""

    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, ids):
        return self.decoder.prefill(ids)


class RecurrentLM(nn.Module):
    """Word-level language model: embedding -> 2-layer LSTM or GRU -> linear.
    Input int64 ids [N, S]; outputs logits [N, S, vocab] and the final hidden
    state of each layer (LSTM also the final cell state), so Y, Y_h and Y_c
    of the exported LSTM/GRU nodes are all checked."""

    def __init__(self, cell, vocab, emb, hidden, layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(emb, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        y, state = self.rnn(self.embed(ids))
        logits = self.head(y)
        return (logits,) + (state if isinstance(state, tuple) else (state,))


def _recurrent_lm(cell, vocab, emb, hidden, layers, batch, seq):
    def build(seed, gen):
        torch.manual_seed(seed)
        model = RecurrentLM(cell, vocab, emb, hidden, layers)
        ids = torch.randint(0, vocab, (batch, seq), generator=gen, dtype=torch.int64)
        outs = ["logits", "h_n"] + (["c_n"] if cell == "lstm" else [])
        return model, (ids,), ["input_ids"], outs
    return build


class DetectHead(nn.Module):
    """Tiny two-stage detector on image [1, 3, 64, 64]: a stride-4 backbone
    (feature [1, 32, 16, 16]), per-cell box deltas decoded against one 8x8
    anchor per cell and a sigmoid score -> 256 boxes (x1, y1, x2, y2);
    torchvision nms (iou 0.5; ONNX NonMaxSuppression) keeps K of them, not
    sliced; roi_align of the kept boxes (ONNX RoiAlign, aligned=True is the
    opset-16 default half_pixel) -> [K, 32, 4, 4] -> MLP -> logits [K, 3].
    Outputs boxes [K, 4], scores [K], logits [K, 3].  The rois (batch index
    0 in column 0) are gathered from a [256, 5] tensor, so nothing but the
    Gathers by keep sees the count."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU())
        self.box = nn.Conv2d(32, 4, 1)
        self.score = nn.Conv2d(32, 1, 1)
        self.fc1 = nn.Linear(512, 32)
        self.fc2 = nn.Linear(32, 3)
        c = torch.arange(16, dtype=torch.float32) * 4 + 2   # cell centres, stride 4
        cy, cx = torch.meshgrid(c, c, indexing="ij")
        self.register_buffer("anchors", torch.stack([cx.flatten(), cy.flatten()], 1), persistent=False)

    def forward(self, image):
        from torchvision.ops import nms, roi_align  # torchvision is imported lazily here
        f = self.backbone(image)
        d = self.box(f).reshape(4, 256).t()
        ctr = self.anchors + 2.0 * d[:, :2]
        wh = 8.0 * torch.exp(d[:, 2:].clamp(max=math.log(8.0)))
        boxes = torch.cat([ctr - 0.5 * wh, ctr + 0.5 * wh], 1)
        scores = torch.sigmoid(self.score(f)).reshape(256)
        keep = nms(boxes, scores, 0.5)
        rois = torch.cat([torch.zeros(256, 1), boxes], 1)[keep]
        pooled = roi_align(f, rois, (4, 4), 0.25, 2, True)
        logits = self.fc2(torch.relu(self.fc1(pooled.flatten(1))))
        return boxes[keep], scores[keep], logits


def _detect_head():
    """He-normal weights; small box-head weights with a width/height bias of
    +1 (boxes ~22 px) and a wider score head, so NMS keeps some of the 256
    boxes and the scores are well apart."""
    def build(seed, gen):
        torch.manual_seed(seed)
        model = DetectHead()
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    std = {model.box: 0.05, model.score: 0.5}.get(m, math.sqrt(2.0 / m.weight[0].numel()))
                    m.weight.copy_(torch.empty_like(m.weight).normal_(0.0, std, generator=gen))
                    m.bias.copy_(torch.empty_like(m.bias).normal_(0.0, 0.1, generator=gen))
            model.box.bias[2:] += 1.0
        x = torch.randn(1, 3, 64, 64, generator=gen)
        return model, (x,), ["image"], ["boxes", "scores", "logits"]
    return build


# --------------------------------------------------------------------------
# Model table
# --------------------------------------------------------------------------

IMAGE_SHAPE = (1, 3, 224, 224)


def _torchvision(ctor_name, **kwargs):
    def build(seed, gen):
        import torchvision.models as tvm
        torch.manual_seed(seed)
        model = getattr(tvm, ctor_name)(weights=None, **kwargs)
        randomize_norm_layers(model, gen, conv_linear_bias=True)
        # two images per calibration batch so BN batch stats are defined everywhere
        calibrate_batchnorm(model, lambda: torch.randn((2,) + IMAGE_SHAPE[1:], generator=gen))
        x = torch.randn(IMAGE_SHAPE, generator=gen)
        return model, (x,), ["input"], ["output"]
    return build


def _bert_inputs(vocab, seq, n_pad, gen):
    ids = torch.randint(0, vocab, (1, seq), generator=gen, dtype=torch.int64)
    # last n_pad positions are padding: additive mask 0 (keep) / -10000 (drop)
    mask = torch.zeros(1, 1, 1, seq, dtype=torch.float32)
    if n_pad:
        mask[..., seq - n_pad:] = -10000.0
    return ids, mask


def _bert(vocab, max_pos, hidden, heads, layers, ffn, seq, n_pad):
    def build(seed, gen):
        torch.manual_seed(seed)
        model = BertLike(vocab, max_pos, hidden, heads, layers, ffn)
        init_transformer_weights(model, gen)
        inputs = _bert_inputs(vocab, seq, n_pad, gen)
        return model, inputs, ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"]
    build.extra_inputs = lambda length, gen: _bert_inputs(vocab, length, min(n_pad, length // 4), gen)
    return build


def _gpt2(vocab, max_pos, hidden, heads, layers, seq):
    def build(seed, gen):
        torch.manual_seed(seed)
        model = GPT2Like(vocab, max_pos, hidden, heads, layers)
        init_transformer_weights(model, gen)
        ids = torch.randint(0, vocab, (1, seq), generator=gen, dtype=torch.int64)
        return model, (ids,), ["input_ids"], ["logits"]
    return build


def _gpt2_decoder(vocab, max_pos, hidden, heads, layers, past):
    """GPT2Decoder with its inputs at a past length: a random prefix of that
    many tokens read by the full-sequence model gives the cache, and the
    next token comes at position past."""
    def inputs_at(model, length, gen):
        prefix = torch.randint(0, vocab, (1, length), generator=gen, dtype=torch.int64)
        ids = torch.randint(0, vocab, (1, 1), generator=gen, dtype=torch.int64)
        with torch.no_grad():
            cache = model.cache_after(prefix)
        return (ids, torch.tensor([[length]], dtype=torch.int64), *cache)

    def build(seed, gen):
        torch.manual_seed(seed)
        model = GPT2Decoder(vocab, max_pos, hidden, heads, layers)
        init_transformer_weights(model, gen)
        model.eval()
        build.extra_inputs = lambda length, g: inputs_at(model, length, g)
        build.extra_export = lambda case_dir: _export_prefill(model, layers, vocab, case_dir)
        return (model, inputs_at(model, past, gen), ["input_ids", "position_ids"] + _kv_names("past", layers),
                ["logits"] + _kv_names("present", layers))
    return build


def _export_prefill(decoder, layers, vocab, case_dir):
    """case_dir/full_model.onnx: the decoder's full-sequence model (the same
    weights; symbolic length "seq"), whose logits each decoding step must
    match and whose presents start the cache (bench/decode.py)."""
    names = ["logits"] + _kv_names("present", layers)
    axes = {"input_ids": {1: "seq"}, "logits": {1: "seq"}}
    axes.update({n: {2: "seq"} for n in names[1:]})
    ids = torch.randint(0, vocab, (1, 5), generator=torch.Generator().manual_seed(1), dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(GPT2Prefill(decoder).eval(), (ids,), os.path.join(case_dir, "full_model.onnx"),
                          opset_version=17, input_names=["input_ids"], output_names=names,
                          dynamic_axes=axes)


def _kv_names(prefix, layers):
    return ["%s_%s_%d" % (prefix, kind, i) for i in range(layers) for kind in ("key", "value")]


def _kv_axes(layers):
    axes = {n: {2: "past"} for n in _kv_names("past", layers)}
    axes.update({n: {2: "present"} for n in _kv_names("present", layers)})
    return axes


# name -> (builder, opset, in default set)
MODELS = collections.OrderedDict([
    ("squeezenet1_0", (_torchvision("squeezenet1_0"), 11, True)),
    ("resnet18", (_torchvision("resnet18"), 13, True)),
    ("resnet50", (_torchvision("resnet50"), 13, True)),
    ("mobilenet_v2", (_torchvision("mobilenet_v2"), 13, True)),
    ("mobilenet_v3_small", (_torchvision("mobilenet_v3_small"), 14, True)),
    ("efficientnet_b0", (_torchvision("efficientnet_b0"), 13, True)),
    ("densenet121", (_torchvision("densenet121"), 12, True)),
    ("googlenet", (_torchvision("googlenet", aux_logits=False, init_weights=True), 11, True)),
    ("bert_tiny_like", (_bert(vocab=1000, max_pos=64, hidden=64, heads=4, layers=2,
                              ffn=256, seq=16, n_pad=3), 13, True)),
    ("gpt2_tiny_like", (_gpt2(vocab=1000, max_pos=64, hidden=64, heads=4, layers=2,
                              seq=16), 17, True)),
    ("lstm_lm", (_recurrent_lm("lstm", vocab=1000, emb=64, hidden=128, layers=2, batch=2,
                               seq=24), 14, True)),
    ("gru_lm", (_recurrent_lm("gru", vocab=1000, emb=64, hidden=128, layers=2, batch=2,
                              seq=24), 14, True)),
    ("bert_base_like", (_bert(vocab=30522, max_pos=512, hidden=768, heads=12, layers=12,
                              ffn=3072, seq=128, n_pad=16), 13, False)),
    # BERT-tiny's size (hidden 128, 2 layers, 2 heads) at seq 128, for the bench harness
    ("bert_tiny_128", (_bert(vocab=30522, max_pos=512, hidden=128, heads=2, layers=2,
                             ffn=512, seq=128, n_pad=16), 13, False)),
    # the same exported with a symbolic length "seq" (compiled once for a range:
    # smelt compile --dim seq=1..MAX), with data sets at several lengths
    ("bert_tiny_dynseq", (_bert(vocab=1000, max_pos=64, hidden=64, heads=4, layers=2,
                                ffn=256, seq=16, n_pad=3), 13, True)),
    ("bert_base_dynseq", (_bert(vocab=30522, max_pos=512, hidden=768, heads=12, layers=12,
                                ffn=3072, seq=128, n_pad=16), 13, False)),
    # gpt2_tiny_like's architecture decoding one token against a key/value cache
    # of run-time length "past" (smelt compile --dim past=1..MAX)
    ("gpt2_tiny_decoder", (_gpt2_decoder(vocab=1000, max_pos=64, hidden=64, heads=4, layers=2,
                                         past=9), 17, True)),
    ("gpt2_decoder", (_gpt2_decoder(vocab=8000, max_pos=1024, hidden=768, heads=12, layers=4,
                                    past=128), 17, False)),
    # NMS -> RoiAlign with a data-dependent count K of kept boxes
    ("detect_head", (_detect_head(), 16, True)),
])

_BERT_SEQ_AXES = {"input_ids": {1: "seq"}, "attention_mask": {3: "seq"},
                  "last_hidden_state": {1: "seq"}}
# name -> (dynamic axes, lengths of test_data_set_1, 2, ...)
DYNAMIC = {
    "bert_tiny_dynseq": (_BERT_SEQ_AXES, [1, 7, 63]),  # hidden is 64: --dim seq=1..63
    "bert_base_dynseq": (_BERT_SEQ_AXES, [1, 7, 512]),
    "gpt2_tiny_decoder": (_kv_axes(2), [1, 2, 31, 62]),  # --dim past=1..62
    "gpt2_decoder": (_kv_axes(4), [1, 17, 511, 1022]),
}


def _extra_data_sets(build, model, in_names, out_names, lengths, case_dir, gen):
    """test_data_set_1.. of a model with a symbolic length: torch's outputs
    on inputs of each length."""
    for k, length in enumerate(lengths, 1):
        inputs = build.extra_inputs(length, gen)
        with torch.no_grad():
            ref = [r.detach().cpu().numpy() for r in _flatten_outputs(model(*inputs))]
        data_dir = os.path.join(case_dir, "test_data_set_%d" % k)
        os.makedirs(data_dir, exist_ok=True)
        for i, (name, t) in enumerate(zip(in_names, inputs)):
            _write_tensor(os.path.join(data_dir, "input_%d.pb" % i), t.numpy(), name)
        for i, (name, arr) in enumerate(zip(out_names, ref)):
            _write_tensor(os.path.join(data_dir, "output_%d.pb" % i), arr, name)


def _source_hash():
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def _tensor_shape(vi):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in vi.type.tensor_type.shape.dim]


def check_case(case_dir, tol=1e-3):
    """Re-read a generated folder from disk and check it; returns a note string.

    onnx.load + onnx.checker (full_check: with shape inference); every
    input_*/output_*.pb parses, is named after the graph input/output of the
    same index and has that input/output's dtype and shape. If onnxruntime
    happens to be importable, also runs the model and compares with the
    stored torch outputs (max |diff| <= tol * max(1, max|ref|)).
    """
    model_path = os.path.join(case_dir, "model.onnx")
    proto = onnx.load(model_path)
    onnx.checker.check_model(proto, full_check=True)
    inits = {i.name for i in proto.graph.initializer}
    g_in = [i for i in proto.graph.input if i.name not in inits]
    g_out = list(proto.graph.output)
    data_dir = os.path.join(case_dir, "test_data_set_0")

    def load_all(prefix, infos):
        arrs = []
        for i, vi in enumerate(infos):
            t = onnx.TensorProto()
            with open(os.path.join(data_dir, "%s_%d.pb" % (prefix, i)), "rb") as f:
                t.ParseFromString(f.read())
            if t.name != vi.name:
                raise RuntimeError("%s_%d.pb is named %r, graph says %r" % (prefix, i, t.name, vi.name))
            if t.data_type != vi.type.tensor_type.elem_type:
                raise RuntimeError("%s_%d.pb dtype %d != graph %d"
                                   % (prefix, i, t.data_type, vi.type.tensor_type.elem_type))
            if list(t.dims) != _tensor_shape(vi):
                raise RuntimeError("%s_%d.pb shape %r != graph %r"
                                   % (prefix, i, list(t.dims), _tensor_shape(vi)))
            arrs.append(onnx.numpy_helper.to_array(t))
        extra = os.path.join(data_dir, "%s_%d.pb" % (prefix, len(infos)))
        if os.path.exists(extra):
            raise RuntimeError("unexpected extra file %s" % extra)
        return arrs

    ins = load_all("input", g_in)
    outs = load_all("output", g_out)
    for a in outs:
        if not np.all(np.isfinite(a)):
            raise RuntimeError("reference output has non-finite values")
    note = "ok"
    try:
        import onnxruntime as ort
    except ImportError:
        return note + " (onnxruntime not installed: no numeric cross-check)"
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {vi.name: a for vi, a in zip(g_in, ins)})
    worst = 0.0
    for vi, ref, g in zip(g_out, outs, got):
        scale = max(1.0, float(np.max(np.abs(ref))))
        err = float(np.max(np.abs(ref.astype(np.float64) - g.astype(np.float64))))
        worst = max(worst, err / scale)
        if err > tol * scale:
            raise RuntimeError("onnxruntime differs from torch on %s: max|diff| %.3g (max|ref| %.3g)"
                               % (vi.name, err, scale))
    return note + " (onnxruntime %s agrees, max rel diff %.2g)" % (ort.__version__, worst)


def _stamp_key(name, opset):
    import torchvision
    return {
        "generator_version": GEN_VERSION,
        "generator_sha256": _source_hash(),
        "name": name,
        "opset": opset,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "onnx": onnx.__version__,
    }


def _up_to_date(case_dir, key):
    try:
        with open(os.path.join(case_dir, STAMP_FILE)) as f:
            stamp = json.load(f)
    except (OSError, ValueError):
        return None
    if stamp.get("key") != key:
        return None
    if not os.path.isfile(os.path.join(case_dir, "model.onnx")):
        return None
    if not os.path.isdir(os.path.join(case_dir, "test_data_set_0")):
        return None
    return stamp


def generate(name, out_dir, force=False):
    """Generate one model; returns (status, stamp dict)."""
    build, opset, _ = MODELS[name]
    key = _stamp_key(name, opset)
    case_dir = os.path.join(out_dir, name)
    if not force:
        stamp = _up_to_date(case_dir, key)
        if stamp is not None:
            return "skipped", stamp

    seed = name_seed(name)
    gen = torch.Generator().manual_seed(seed)
    t0 = time.time()
    model, inputs, in_names, out_names = build(seed, gen)
    model.eval()

    # build into a temp folder, then swap in, so an interrupted run never
    # leaves a half-written folder that looks complete
    tmp_dir = os.path.join(out_dir, ".%s.tmp%d" % (name, os.getpid()))
    shutil.rmtree(tmp_dir, ignore_errors=True)
    try:
        axes, lengths = DYNAMIC.get(name, (None, []))
        summary = export_case(model, inputs, in_names, out_names, opset, tmp_dir,
                              dynamic_axes=axes)
        _extra_data_sets(build, model, in_names, out_names, lengths, tmp_dir, gen)
        if hasattr(build, "extra_export"):
            build.extra_export(tmp_dir)
        stamp = {"key": key, "seconds": round(time.time() - t0, 2), "summary": summary}
        with open(os.path.join(tmp_dir, STAMP_FILE), "w") as f:
            json.dump(stamp, f, indent=1, sort_keys=True)
            f.write("\n")
        shutil.rmtree(case_dir, ignore_errors=True)
        os.rename(tmp_dir, case_dir)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return "generated", stamp


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--only", help="comma-separated model names (may include non-default ones)")
    ap.add_argument("--list", action="store_true", help="print the default model names and exit")
    ap.add_argument("--all", action="store_true", help="also generate the non-default (big) models")
    ap.add_argument("--force", action="store_true", help="regenerate even if up to date")
    ap.add_argument("--ops", action="store_true", help="print op-type counts of each model")
    ap.add_argument("--check", action="store_true",
                    help="re-read each model folder and check it (checker, .pb names/shapes; "
                         "numeric cross-check if onnxruntime is importable)")
    args = ap.parse_args(argv)

    if args.list:
        for n, (_, _, default) in MODELS.items():
            if default:
                print(n)
        return 0
    if not args.out:
        ap.error("--out is required")

    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            ap.error("unknown model(s): %s (known: %s)" % (", ".join(unknown), ", ".join(MODELS)))
    else:
        names = [n for n, (_, _, d) in MODELS.items() if d or args.all]

    os.makedirs(args.out, exist_ok=True)
    failed = []
    t_all = time.time()
    for name in names:
        t0 = time.time()
        try:
            status, stamp = generate(name, args.out, force=args.force)
        except Exception as e:  # report and go on with the others
            failed.append(name)
            print("%-20s FAILED after %.1fs: %s: %s" % (name, time.time() - t0, type(e).__name__, e),
                  file=sys.stderr)
            continue
        s = stamp["summary"]
        print("%-20s %-9s %6.1fs  opset %-2s  %5.1f MB  %d nodes"
              % (name, status, time.time() - t0, s["opset"], s["model_bytes"] / 1e6,
                 sum(s["ops"].values())))
        if args.ops:
            print("    " + ", ".join("%s:%d" % kv for kv in s["ops"].items()))
        if args.check:
            try:
                print("    check: " + check_case(os.path.join(args.out, name)))
            except Exception as e:
                failed.append(name)
                print("    check FAILED: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.stdout.flush()
    print("total %.1fs, %d model(s), %d failed" % (time.time() - t_all, len(names), len(failed)))
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
