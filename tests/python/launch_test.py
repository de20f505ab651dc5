"""What a new user sees before any rank talks to another: the version, the
`qccl` command, help(qccl.ddp_hook), and qccl.init() started on its own
(neither mpirun nor torchrun), which runs one rank and says so once."""

import os
import pydoc
import subprocess
import sys

import qccl

LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS",
                      "TORCHELASTIC_RUN_ID", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def alone(code):
    """Runs `code` in a new interpreter without any launcher's variables."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=True)


def test_version_and_command():
    assert qccl.__version__.count(".") == 2, qccl.__version__
    result = subprocess.run([sys.executable, "-m", "qccl", "--version"], capture_output=True,
                            text=True, timeout=60, check=True)
    assert result.stdout.strip() == f"qccl {qccl.__version__}", result.stdout
    listed = subprocess.run([sys.executable, "-m", "qccl", "codecs"], capture_output=True,
                            text=True, timeout=60, check=True).stdout
    assert all(name in listed for name, _ in qccl.codecs())


def test_help_says_devices_dtypes_codecs_and_set_up():
    text = pydoc.render_doc(qccl.ddp_hook, renderer=pydoc.plaintext)
    for needed in ("CPU", "float32", "bfloat16", "float16", "float64", "qccl.codecs()",
                   "torchrun", "qccl.init()", "register_comm_hook", "process_group"):
        assert needed in text, f"help(qccl.ddp_hook) does not mention {needed!r}"


def test_init_alone_says_once_it_runs_one_rank():
    result = alone("import qccl; qccl.init(); qccl.init(); "
                   "assert (qccl.rank(), qccl.size()) == (0, 1); qccl.shutdown()")
    notices = [line for line in result.stderr.splitlines() if "runs one rank" in line]
    assert len(notices) == 1, result.stderr
    assert "torchrun" in notices[0] and "mpirun" in notices[0], notices[0]


if __name__ == "__main__":
    for test in (test_version_and_command, test_help_says_devices_dtypes_codecs_and_set_up,
                 test_init_alone_says_once_it_runs_one_rank):
        test()
        print(f"ok {test.__name__}")
