"""What killed mpiruns leave on the driver's machine (tests/cluster/cluster_test.py and chaos.py)."""
import glob
import os


def mpirun_leftovers(since):
    """Session folders (TMPDIR or /tmp, ompi.NODE.UID/pid.PID) of the driver's mpiruns, those whose contact
    address is on the test hosts' network, made since `since`, whose mpirun has ended without removing them:
    what an mpirun killed with SIGKILL leaves unless tune removes it."""
    left = []
    for top in glob.glob(os.path.join(os.environ.get("TMPDIR") or "/tmp", "ompi.*.%d" % os.geteuid())):
        for folder in glob.glob(os.path.join(top, "pid.*")):
            try:
                if os.stat(folder).st_mtime < since - 1:
                    continue
                pid = int(folder.rsplit(".", 1)[1])
                with open(os.path.join(folder, "contact.txt")) as f:
                    contact = f.read()
            except (OSError, ValueError):
                continue
            if "tcp://10.77.0." in contact and not os.path.exists(f"/proc/{pid}"):
                left.append(folder)
    return left
