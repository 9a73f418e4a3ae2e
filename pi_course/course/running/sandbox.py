"""Where a learner's check runs: in bubblewrap (Linux), or, where there is none, only scrubbed and bounded.

With bubblewrap (``bwrap``, the sandbox Flatpak uses) each check gets its own PID, network, IPC,
UTS and cgroup namespaces (no network but its own loopback, no view of other processes, and
nothing it starts outlives it), the system and the course's Python read-only, its own temporary
folder as the only writable place, a fresh empty ``HOME`` and ``/tmp``, and an environment of a
few named variables. Without it (``none``) the check runs as the instructor's user, scrubbed and
time-bounded only, and every record says ``not-sandboxed``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pi_course_here

from ..copies.locate import PACKAGE

CHOICES = ("auto", "bwrap", "none")
NOT_SANDBOXED = "not-sandboxed"  # the flag of every record checked without a sandbox
MAX_FILE_BYTES = 64 * 1024 * 1024  # no file the check writes (its output included) grows past this
TMPFS_BYTES = 256 * 1024 * 1024  # the sandbox's /tmp and HOME, each
SANDBOX_HOME = "/home/learner"
# Without a sandbox: the only variables of the instructor's environment a check sees.
KEPT_VARIABLES = frozenset(
    {"PATH", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC",
     "PATHEXT", "VIRTUAL_ENV", "CONDA_PREFIX"}
)  # fmt: skip
# Never kept, whatever its name starts with: anything that looks like a secret or a provider setting.
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|^PI_COURSE_|^OPENAI_", re.IGNORECASE
)
# Read-only system folders a Python needs inside the sandbox (links like /bin -> usr/bin are kept).
SYSTEM = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin")
SYSTEM_FILES = (
    "/etc/hosts", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/ssl",
    "/etc/ca-certificates", "/etc/pki", "/etc/ld.so.cache", "/etc/alternatives",
)  # fmt: skip
# Sets the size bound on every file, then runs the check: inherited by everything it starts.
_LIMITED = (
    "import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


class SandboxError(Exception):
    """``--sandbox bwrap`` where bubblewrap is missing or does not work; the message is one line."""


def _python_folders() -> list[Path]:
    """The interpreter and the packages the check imports: read-only inside the sandbox.

    The course's own clone is not bound whole (its ``.git``, ``.env`` or notes stay out): only
    the ``pi_course`` package in it and ``pi_course_here.py`` beside it.
    """
    folders = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parents[1]}
    for entry in sys.path:
        path = Path(entry or ".").absolute()
        if entry and path.is_dir() and path != PACKAGE.parent:
            folders.add(path)
    folders |= {PACKAGE, Path(pi_course_here.__file__)}
    # A folder inside another one already bound needs no bind of its own.
    ordered = sorted(folders, key=lambda path: len(path.parts))
    kept: list[Path] = []
    for folder in ordered:
        if not any(folder.is_relative_to(parent) for parent in kept):
            kept.append(folder)
    return kept


@dataclass(frozen=True)
class Sandbox:
    """How checks run: ``bwrap`` or ``none``; ``why`` says why there is no sandbox (``auto``)."""

    kind: str
    why: str | None = None

    @property
    def sandboxed(self) -> bool:
        return self.kind == "bwrap"

    def command(self, command: list[str], work: Path, environ: Mapping[str, str] | None = None) -> list[str]:
        """``command`` as it runs for a check whose only writable folder is ``work``."""
        limited = [sys.executable, "-c", _LIMITED, str(MAX_FILE_BYTES)]
        if self.kind != "bwrap":
            return [*limited, *command]
        bwrap = shutil.which("bwrap") or "bwrap"
        arguments = [
            bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--hostname", "grade",
        ]  # fmt: skip
        for folder in SYSTEM:
            if os.path.islink(folder):
                arguments += ["--symlink", os.readlink(folder), folder]
            elif os.path.isdir(folder):
                arguments += ["--ro-bind", folder, folder]
        for name in SYSTEM_FILES:
            arguments += ["--ro-bind-try", name, name]
        arguments += ["--proc", "/proc", "--dev", "/dev"]
        arguments += ["--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
        arguments += ["--size", str(TMPFS_BYTES), "--tmpfs", SANDBOX_HOME]
        for python in _python_folders():
            arguments += ["--ro-bind", str(python), str(python)]
        arguments += ["--bind", str(work), str(work), "--chdir", str(work), "--clearenv"]
        for name, value in sandbox_environment().items():
            arguments += ["--setenv", name, value]
        return [*arguments, *limited, *command]

    def environment(self, work: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment the wrapped command starts with (bwrap clears it again inside)."""
        if self.kind == "bwrap":
            return {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}
        return scrubbed_environment(environ, home=work / "home")


def sandbox_environment() -> dict[str, str]:
    """The few named variables a sandboxed check sees, and nothing of the instructor's."""
    return {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": SANDBOX_HOME,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": str(PACKAGE.parent),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
    }


def scrubbed_environment(
    environ: Mapping[str, str] | None = None, home: Path | None = None
) -> dict[str, str]:
    """Without a sandbox: the allow-list minus anything secret-looking, and a fresh ``HOME``."""
    source = dict(os.environ if environ is None else environ)
    env = {
        name: value
        for name, value in source.items()
        if (name in KEPT_VARIABLES or name.startswith("LC_")) and not SECRET_NAME.search(name)
    }
    # The instructor's pi_course runs the check (found even when it is not installed, a clone),
    # and bytecode never lands in the temporary copy.
    env["PYTHONPATH"] = str(PACKAGE.parent)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        env["HOME"] = env["USERPROFILE"] = str(home)
        env["TMPDIR"] = env["TEMP"] = env["TMP"] = str(home)
    return env


def _bwrap_works() -> str | None:
    """Why bubblewrap cannot sandbox a check here, or ``None`` when it can (a one-second trial run)."""
    if os.name != "posix" or not sys.platform.startswith("linux"):
        return "bubblewrap 只在 Linux 上可用"
    if shutil.which("bwrap") is None:
        return (
            "没有安装 bubblewrap（Debian/Ubuntu：apt-get install bubblewrap；Fedora：dnf install bubblewrap）"
        )
    with tempfile.TemporaryDirectory(prefix="pi-course-sandbox-") as scratch:
        trial = Sandbox("bwrap").command([sys.executable, "-c", "import pi_course.course"], Path(scratch))
        try:
            ran = subprocess.run(
                trial,
                env=Sandbox("bwrap").environment(Path(scratch)),
                capture_output=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"bubblewrap 无法运行：{error}"
    if ran.returncode != 0:
        last = (ran.stderr.decode("utf-8", "replace").strip().splitlines() or ["?"])[-1]
        return f"bubblewrap 无法运行：{last}"
    return None


def choose(name: str = "auto") -> Sandbox:
    """The sandbox for ``--sandbox name``: ``auto`` falls back to none (saying why), ``bwrap`` refuses."""
    if name == "none":
        return Sandbox("none", "--sandbox none")
    problem = _bwrap_works()
    if problem is None:
        return Sandbox("bwrap")
    if name == "bwrap":
        raise SandboxError(f"grade 05 --sandbox bwrap：{problem}。没有检查任何副本。")
    return Sandbox("none", problem)


def not_sandboxed_line(sandbox: Sandbox) -> str:
    """The loud line above the table and in the report's header when checks ran without a sandbox."""
    return (
        f"⚠ not-sandboxed：{sandbox.why}。学习者的代码以你的用户身份运行，能读你能读的文件、能联网；"
        "只有时间上限和去掉密钥的环境。"
        "在 Linux 上安装 bubblewrap，或在 Linux 容器/虚拟机里运行 grade（见 docs/instructors.md）。"
    )
