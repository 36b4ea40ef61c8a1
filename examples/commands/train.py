"""A command trainable in Python with no dependencies (no tune library):
the config from TUNE_CONFIG, checkpoints through TUNE_CHECKPOINT_DIR and
TUNE_RESTORE_FROM, one `@tune {json}` line per result. PBT clones a better
trial's checkpoint into this one and perturbs its config; the script only
restores whatever TUNE_RESTORE_FROM holds.
  tune run examples/commands/python_pbt.yaml
"""
import json
import math
import os
import time

config = json.loads(os.environ["TUNE_CONFIG"])
lr, momentum = config["lr"], config["momentum"]

# A toy model: minimise f(w) = (w - 3)^2 by gradient descent with momentum.
w, velocity = 0.0, 0.0
restore = os.environ.get("TUNE_RESTORE_FROM")
if restore:
    with open(os.path.join(restore, "state.json")) as f:
        state = json.load(f)
    w, velocity = state["w"], state["velocity"]

step = int(os.environ.get("TUNE_ITERATION", "0"))
while step < config["steps"]:
    step += 1
    for _ in range(10):
        grad = 2 * (w - 3)
        velocity = momentum * velocity - lr * grad
        w += velocity
    loss = (w - 3) ** 2
    # Each checkpoint in a folder of its own: tune takes it when it reads
    # the line, while this script already works on the next step.
    checkpoint = os.path.join(os.environ["TUNE_CHECKPOINT_DIR"], "step_%d" % step)
    os.makedirs(checkpoint)
    with open(os.path.join(checkpoint, "state.json"), "w") as f:
        json.dump({"w": w, "velocity": velocity}, f)
    # NaN (a diverged run) is fine to print: the trial fails as for any NaN metric.
    print("@tune " + json.dumps({"loss": loss if math.isfinite(loss) else float("nan"), "checkpoint": checkpoint}),
          flush=True)
    time.sleep(config.get("sleep_s", 0))
