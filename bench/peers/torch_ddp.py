#!/usr/bin/python3
"""PyTorch DDP over gloo on Fashion-MNIST: the peer of bench/ddp (torch 1.13,
Debian's python3-torch). Same models, batch per rank, optimizer and one
intra-op thread per rank as ddp_bench; data in memory, batches by
DistributedSampler indices (no DataLoader workers).

  torch_ddp.py --model mlp|cnn --ranks N --steps S --warmup W
Prints one JSON line: samples_per_s over all ranks, step_ms, allreduce_ms (gloo
allreduce time per step, measured by timing DDP's comm hook futures is not
possible from Python, so it is left out: null).
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

DATA = os.environ.get("TUNE_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def load():
    with gzip.open(f"{DATA}/train-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(f"{DATA}/train-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - 0.2860) / 0.3530
    return x, torch.from_numpy(labels.astype(np.int64))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 256), nn.Linear(256, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 3), nn.Conv2d(32, 64, 3)
        self.fc1, self.fc2 = nn.Linear(64 * 12 * 12, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2).flatten(1)
        return self.fc2(F.relu(self.fc1(x)))


def worker(rank, args, queue):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    x, y = load()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Mlp() if args.model == "mlp" else Cnn())
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sampler = torch.utils.data.distributed.DistributedSampler(range(len(x)), num_replicas=args.ranks, rank=rank, seed=0)
    index = torch.tensor(list(iter(sampler)))
    batches = index.split(args.batch)
    model.train()
    start = time.perf_counter()
    for s in range(args.warmup + args.steps):
        if s == args.warmup:
            dist.barrier()
            start = time.perf_counter()
        rows = batches[s % len(batches)]
        opt.zero_grad()
        F.cross_entropy(model(x[rows]), y[rows]).backward()
        opt.step()
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    if rank == 0:
        queue.put(elapsed.item())
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--port", type=int, default=29531)
    args = p.parse_args()
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(worker, args=(args, queue), nprocs=args.ranks, join=True)
    elapsed = queue.get()
    print(json.dumps({"impl": "torch_ddp_gloo", "model": args.model, "ranks": args.ranks,
                      "batch_per_rank": args.batch, "steps": args.steps,
                      "samples_per_s": args.steps * args.batch * args.ranks / elapsed,
                      "step_ms": 1000 * elapsed / args.steps, "allreduce_ms": None}))


if __name__ == "__main__":
    main()
