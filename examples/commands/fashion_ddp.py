"""PyTorch DDP on Fashion-MNIST, written for torchrun, run unchanged as a
tune trial group (resources.workers: 2): tune sets RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT as torchrun does.

  torchrun --nproc_per_node 2 examples/commands/fashion_ddp.py      # alone
  tune run examples/commands/fashion_ddp_asha.yaml --slots 2          # tuned

Under tune the config comes from TUNE_CONFIG; every epoch rank 0 saves a
checkpoint into a new folder under TUNE_CHECKPOINT_DIR and prints one `@tune {json}` result; a
paused (ASHA) or exploited (PBT) trial restarts from TUNE_RESTORE_FROM.
Needs python3-torch and dataset-fashion-mnist (Debian).
"""
import gzip
import json
import os
import struct
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

DATA = os.environ.get("TUNE_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
DEFAULTS = {"lr": 0.05, "momentum": 0.9, "width": 256, "batch_size": 64, "subset": 6000, "val_size": 2000,
            "epochs": 4, "threads": 1}


def read_idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    if magic == 2051:  # images
        rows, cols = struct.unpack(">II", data[8:16])
        pixels = torch.frombuffer(bytearray(data[16:]), dtype=torch.uint8)
        return pixels.view(count, rows * cols).float().div_(255.0)
    return torch.frombuffer(bytearray(data[8:]), dtype=torch.uint8).long()


def main():
    config = dict(DEFAULTS, **json.loads(os.environ.get("TUNE_CONFIG", "{}")))
    torch.set_num_threads(int(config["threads"]))
    dist.init_process_group("gloo")  # from the torchrun variables
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    images, labels = read_idx("train-images-idx3-ubyte.gz"), read_idx("train-labels-idx1-ubyte.gz")
    n_train, n_val = int(config["subset"]), int(config["val_size"])
    train_x, train_y = images[:n_train], labels[:n_train]
    val_x, val_y = images[-n_val:], labels[-n_val:]
    shard = slice(rank, n_train, world)  # each rank its share of every epoch
    x, y = train_x[shard], train_y[shard]

    width = int(config["width"])
    model = nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width // 2), nn.ReLU(),
                          nn.Linear(width // 2, 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=config["lr"], momentum=config["momentum"])
    epoch = 0
    restore = os.environ.get("TUNE_RESTORE_FROM")
    if restore:
        state = torch.load(os.path.join(restore, "model.pt"))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        for group in optimizer.param_groups:  # PBT may have perturbed them
            group["lr"], group["momentum"] = config["lr"], config["momentum"]
        epoch = state["epoch"]

    batch = int(config["batch_size"])
    while epoch < int(config["epochs"]):
        epoch += 1
        start = time.time()
        generator = torch.Generator().manual_seed(epoch)
        order = torch.randperm(len(x), generator=generator)
        ddp.train()
        for i in range(0, len(order) - batch + 1, batch):
            idx = order[i:i + batch]
            optimizer.zero_grad()
            F.cross_entropy(ddp(x[idx]), y[idx]).backward()
            optimizer.step()
        seconds = time.time() - start
        if rank == 0:
            model.eval()
            with torch.no_grad():
                logits = model(val_x)
                val_loss = F.cross_entropy(logits, val_y).item()
                accuracy = (logits.argmax(1) == val_y).float().mean().item()
            result = {"val_accuracy": accuracy, "val_loss": val_loss, "epoch": epoch,
                      "samples_per_s": len(order) // batch * batch * world / seconds}
            checkpoint = os.environ.get("TUNE_CHECKPOINT_DIR")
            if checkpoint:  # a folder per checkpoint, which tune takes over
                checkpoint = os.path.join(checkpoint, "epoch_%d" % epoch)
                os.makedirs(checkpoint)
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
                           os.path.join(checkpoint, "model.pt"))
                result["checkpoint"] = checkpoint
            print("@tune " + json.dumps(result), flush=True)
        dist.barrier()  # rank 0's checkpoint is written before anyone goes on
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
