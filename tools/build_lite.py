"""Build the zero-install, offline JupyterLite edition into ``build/lite/`` (``make lite``).

Run by the project's own venv (it makes the practice copy and the pi_course wheel); the site
itself is generated in a separate venv made with a Python >= 3.12 that this script finds
(``LITE_PYTHON``, then ``python3.14`` … ``python3.12`` on PATH, then pyenv's versions).

What the site holds, all served by itself (no CDN is ever asked for anything):

* the JupyterLab front end from ``jupyterlite-core``, the Pyodide kernel and widgets front ends;
* the Pyodide runtime from the npm package ``pyodide`` (runtime only: no package of its own);
* ``static/pyodide/pyodide-lock.json`` written here, naming every wheel the kernel and the course
  import, each a file next to it: ``tools/lite/requirements.txt`` (pinned, pure Python), the
  kernel's shim wheels and pi_course built from this tree;
* ``notebooks/`` (the reference, with their stored outputs) and ``practice/`` (a fresh practice
  copy made by ``python -m pi_course practice 05``, its ``LEARNING.md`` the browser's edition) in
  the file browser;
* ``index.html``: the landing page (``tools/lite/index.html``), and ``tools/lite/overrides.json``:
  Markdown opens rendered, the theme follows the system's, and a saved notebook keeps its widget
  state (a stepper saved, closed and reopened is still there, as under ``make lab``).

The report (sizes, largest parts) is printed and written to ``build/lite-report.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "tools" / "lite"
BUILD = ROOT / "build"
OUTPUT = BUILD / "lite"
CACHE = BUILD / ".lite-cache"
ENV = BUILD / ".lite-env"

PYODIDE_NPM = "pyodide@314.0.8"
# The runtime files the kernel loads; the npm package's own lock (CDN entries) is replaced.
PYODIDE_RUNTIME = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "package.json")
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
# The kernel installs these with piplite unless they are preloaded; all come from the site's lock.
# "jedi" is named so the kernel does not ask piplite for it; the lock holds an empty placeholder
# distribution under that name (no module: IPython completes without jedi), 5 MB saved.
KERNEL_PACKAGES = ("micropip", "piplite", "ipykernel", "comm", "pyodide-kernel", "ipython", "jedi")
# pytest, hypothesis and starlette are imported from inside pi_course and its checks (uvicorn by a
# beyond check; hypothesis by the comparison with the reference), which the
# kernel's import scanner does not see: preload them with what the notebooks use.
COURSE_PACKAGES = ("pi-course", "httpx", "starlette", "pytest", "hypothesis", "uvicorn", "ipywidgets")
# What Pyodide's own marker environment says; used to keep only the dependencies that apply there.
MARKER_ENV = {
    "implementation_name": "cpython",
    "implementation_version": "3.14.2",
    "os_name": "posix",
    "platform_machine": "wasm32",
    "platform_python_implementation": "CPython",
    "platform_release": "",
    "platform_system": "Emscripten",
    "platform_version": "",
    "python_full_version": "3.14.2",
    "python_version": "3.14",
    "sys_platform": "emscripten",
    "extra": "",
}
MIN_PYTHON = (3, 12)


def say(message: str) -> None:
    print(f"lite：{message}", flush=True)


def run(*command: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> None:
    """Run a build step with its output kept: shown only when the step fails (its chatter, temporary
    paths and optional-dependency warnings say nothing true about the site)."""
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        step = " ".join(str(part) for part in command)
        sys.exit(f"lite：这一步失败了（退出码 {done.returncode}）：{step}")


# --- a Python >= 3.12 for the build ---------------------------------------------------------------


def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True, text=True, check=True, timeout=30,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    major, minor = out.split()
    return int(major), int(minor)


def find_build_python() -> str | None:
    """The first Python >= 3.12 among LITE_PYTHON, python3.1x on PATH and pyenv's versions."""
    candidates = [os.environ.get("LITE_PYTHON", "")]
    candidates += [shutil.which(f"python3.{minor}") or "" for minor in (14, 13, 12)]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    pyenv_pythons = sorted((pyenv_root / "versions").glob("3.1[2-9]*/bin/python"), reverse=True)
    candidates += [str(p) for p in pyenv_pythons]
    candidates.append(sys.executable)
    for candidate in filter(None, candidates):
        version = _version(candidate)
        if version is not None and version >= MIN_PYTHON:
            return candidate
    return None


def build_env() -> Path:
    """The build venv (re-made when tools/lite/build-requirements.txt changes)."""
    requirements = HERE / "build-requirements.txt"
    stamp = ENV / ".installed"
    if stamp.is_file() and stamp.read_text() == requirements.read_text():
        return ENV / "bin"
    python = find_build_python()
    if python is None:
        sys.exit(
            "make lite 构建 JupyterLite 需要 Python >= 3.12：装一个（apt install python3.12，或 "
            "pyenv install 3.12），或者用 LITE_PYTHON=它的路径 指定"
        )
    shutil.rmtree(ENV, ignore_errors=True)
    say(f"用 {python} 创建构建用的 venv（只需一次，大约一分钟）")
    run(python, "-m", "venv", ENV)
    run(ENV / "bin" / "python", "-m", "pip", "install", "--quiet", "-r", requirements)
    stamp.write_text(requirements.read_text())
    return ENV / "bin"


# --- the pieces ----------------------------------------------------------------------------------


def pyodide_runtime() -> Path:
    """The npm package ``pyodide``, unpacked once into the cache."""
    unpacked = CACHE / PYODIDE_NPM.replace("@", "-")
    if (unpacked / "package" / "pyodide.asm.wasm").is_file():
        return unpacked / "package"
    CACHE.mkdir(parents=True, exist_ok=True)
    say(f"下载 Pyodide 运行时（{PYODIDE_NPM}，只需一次）")
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
        run("npm", "pack", "--silent", PYODIDE_NPM, "--pack-destination", scratch, cwd=CACHE)
        (tarball,) = Path(scratch).glob("*.tgz")
        shutil.rmtree(unpacked, ignore_errors=True)
        with tarfile.open(tarball) as archive:
            archive.extractall(unpacked, filter="data")
    return unpacked / "package"


def third_party_wheels(bin_dir: Path) -> Path:
    """The pinned wheels of tools/lite/requirements.txt, downloaded once into the cache."""
    requirements = HERE / "requirements.txt"
    target = CACHE / "wheels"
    stamp = target / ".requirements"
    if stamp.is_file() and stamp.read_text() == requirements.read_text():
        return target
    shutil.rmtree(target, ignore_errors=True)
    say("下载 tools/lite/requirements.txt 里固定版本的 wheel（只需一次）")
    run(
        bin_dir / "python", "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
        "--python-version", "3.14", "--implementation", "py", "--abi", "none", "--platform", "any",
        "-d", target, "-r", requirements,
    )  # fmt: skip
    stamp.write_text(requirements.read_text())
    return target


def course_wheel(scratch: Path) -> Path:
    """pi_course built from this tree (the project venv has hatchling)."""
    out = scratch / "course-wheel"
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", out, ROOT)
    (wheel,) = out.glob("pi_course-*.whl")
    return wheel


def kernel_wheels(bin_dir: Path) -> list[Path]:
    """The shim wheels jupyterlite-pyodide-kernel ships (pyodide-kernel, piplite, ipykernel, …)."""
    share = bin_dir.parent / "share/jupyter/labextensions/@jupyterlite/pyodide-kernel-extension"
    wheels = sorted((share / "static" / "pypi").glob("*.whl"))
    # Two widgetsnbextension shims (3.x, 4.x): ipywidgets 8 is the 4.x one.
    return [w for w in wheels if not w.name.startswith("widgetsnbextension-3.")]


def placeholder_wheel(scratch: Path, name: str) -> Path:
    """A distribution with no module at all: satisfies the kernel's preload list, imports nothing."""
    version = "0.0.0"
    wheel = scratch / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        "Summary: placeholder: left out of pi_course's browser edition\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: pi_course\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    records = [f"{path},,\n" for path in [*files, f"{info}/RECORD"]]
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", "".join(records))
    return wheel


def contents(scratch: Path) -> Path:
    """notebooks/ (the reference) and practice/ (a fresh practice copy), side by side."""
    from pi_course.chapter.notebooks import fit_first_box

    root = scratch / "contents"
    (root / "notebooks").mkdir(parents=True)
    for notebook in sorted((ROOT / "notebooks").glob("05-*.ipynb")):  # the book, its box for the tab
        data = fit_first_box(json.loads(notebook.read_text(encoding="utf-8")), "browser-book")
        text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
        (root / "notebooks" / notebook.name).write_text(text, encoding="utf-8")
    run(sys.executable, "-m", "pi_course", "practice", "05", root / "practice")  # its hint: a scratch path
    # The browser's LEARNING.md: each terminal step as the notebook call (no terminal in a tab).
    from pi_course.course.copies.practice import learning_md
    from pi_course.course.copies.pythons import MADE_BY

    (root / "practice" / "LEARNING.md").write_text(learning_md("browser"), encoding="utf-8")
    (root / "practice" / MADE_BY).unlink()  # this machine's Python: nothing a tab can run
    return root


# --- the lock ------------------------------------------------------------------------------------


def _requirement_names(metadata: str) -> list[str]:
    """Dependencies that apply in Pyodide (no extras), by normalized name."""
    from packaging.requirements import Requirement

    names = []
    for line in Parser().parsestr(metadata).get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(MARKER_ENV):
            names.append(normalize(requirement.name))
    return names


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_entry(wheel: Path) -> tuple[str, dict[str, object], list[str]]:
    """One pyodide-lock package entry for a pure wheel, and its declared dependencies."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA") and n.count("/") == 1]
        metadata = archive.read(metadata_name).decode()
    info = Parser().parsestr(metadata)
    imports = sorted(
        {
            name.split("/")[0].removesuffix(".py")
            for name in names
            if not name.split("/")[0].endswith((".dist-info", ".data"))
            and (name.endswith(".py") or "/" in name)
            and not name.split("/")[0].startswith("_")
        }
    )
    entry: dict[str, object] = {
        "name": normalize(info["Name"]),
        "version": info["Version"],
        "file_name": wheel.name,
        "install_dir": "site",
        "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "package_type": "package",
        "imports": imports,
        "depends": [],
        "unvendored_tests": False,
        "shared_library": False,
    }
    return normalize(info["Name"]), entry, _requirement_names(metadata)


def write_lock(runtime: Path, wheels: list[Path], target: Path) -> list[str]:
    """pyodide-lock.json naming exactly ``wheels``; returns the dependencies nobody provides."""
    info = json.loads((runtime / "pyodide-lock.json").read_text())["info"]
    packages: dict[str, dict[str, object]] = {}
    wanted: dict[str, list[str]] = {}
    for wheel in wheels:
        name, entry, requires = lock_entry(wheel)
        packages[name] = entry
        wanted[name] = requires
        shutil.copy2(wheel, target / wheel.name)
    missing = []
    for name, requires in wanted.items():
        packages[name]["depends"] = sorted(r for r in set(requires) if r in packages)
        missing += [f"{name} -> {r}" for r in requires if r not in packages]
    lock = {"info": info, "packages": dict(sorted(packages.items()))}
    (target / "pyodide-lock.json").write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
    return sorted(missing)


# --- the site ------------------------------------------------------------------------------------


def configure(site: Path) -> None:
    """Point the Pyodide kernel at the site's own runtime and lock; never at PyPI or a CDN."""
    config_path = site / "jupyter-lite.json"
    config = json.loads(config_path.read_text())
    data = config.setdefault("jupyter-config-data", {})
    data["exposeAppInBrowser"] = "true"  # window.jupyterapp: tools/lite/boot.js works with it
    settings = data.setdefault("litePluginSettings", {}).setdefault(KERNEL_PLUGIN, {})
    settings.update(
        {
            "pyodideUrl": "./static/pyodide/pyodide.mjs",
            "disablePyPIFallback": True,
            "pipliteUrls": [],
            "loadPyodideOptions": {
                "lockFileURL": "./static/pyodide/pyodide-lock.json",
                "packages": [*KERNEL_PACKAGES, *COURSE_PACKAGES],
            },
        }
    )
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")


BOOT_SCRIPT = "pi-course-boot.js"


def add_boot_script(lab: Path) -> None:
    """JupyterLab's page loads ``tools/lite/boot.js``: the kernel's boot shown, runs clicked during it
    queued, reset() reloading an open editor, the answer key marked (see the script)."""
    shutil.copy2(HERE / "boot.js", lab / BOOT_SCRIPT)
    page = lab / "index.html"
    text = page.read_text(encoding="utf-8")
    tag = f'<script src="./{BOOT_SCRIPT}" defer></script>'
    if tag not in text:
        if "</head>" not in text:
            sys.exit(f"lite: {page} has no </head>: cannot add {BOOT_SCRIPT}")
        page.write_text(text.replace("</head>", f"  {tag}\n</head>", 1), encoding="utf-8")


# What the site's wheels declare and the site leaves out on purpose (tools/lite/requirements.txt says
# why for each): recorded in build/lite-report.json, never printed as something to do.
LEFT_OUT = frozenset(
    {"jedi", "parso", "pexpect", "ptyprocess", "jupyterlab-widgets", "widgetsnbextension", "openai"}
)


def unexpected(missing: list[str]) -> list[str]:
    """The ``"wheel -> dependency"`` pairs of ``missing`` that :data:`LEFT_OUT` does not name."""
    return [pair for pair in missing if pair.rpartition(" -> ")[2] not in LEFT_OUT]


def add_icons(site: Path) -> None:
    """Every page of the site names JupyterLab's icon, also kept at the site's root: a browser asks
    a page that names none for ``/favicon.ico``, which no static site has (a 404 in every log)."""
    shutil.copy2(site / "lab" / "favicon.ico", site / "favicon.ico")
    for page in site.rglob("index.html"):
        if page.relative_to(site).parts[0] in ("build", "extensions", "static"):
            continue
        text = page.read_text(encoding="utf-8")
        if 'rel="icon"' in text:
            continue
        if "<head>" not in text:
            sys.exit(f"lite: {page} has no <head>: cannot name the site's icon")
        href = Path(os.path.relpath(site / "favicon.ico", page.parent)).as_posix()
        page.write_text(
            text.replace("<head>", f'<head>\n    <link rel="icon" href="{href}">', 1), encoding="utf-8"
        )


def report(site: Path) -> dict[str, object]:
    """Site size without source maps, and the largest parts."""
    files = [p for p in site.rglob("*") if p.is_file() and not p.name.endswith(".map")]
    total = sum(p.stat().st_size for p in files)
    largest = sorted(files, key=lambda p: p.stat().st_size, reverse=True)[:8]
    return {
        "site_bytes": total,
        "site_mb": round(total / 1e6, 1),
        "files": len(files),
        "largest": [[str(p.relative_to(site)), round(p.stat().st_size / 1e6, 2)] for p in largest],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    output: Path = args.output.resolve()

    bin_dir = build_env()
    runtime = pyodide_runtime()
    wheels = third_party_wheels(bin_dir)
    with tempfile.TemporaryDirectory(prefix="pi-course-lite-") as scratch_name:
        scratch = Path(scratch_name)
        all_wheels = [
            *sorted(wheels.glob("*.whl")),
            *kernel_wheels(bin_dir),
            course_wheel(scratch),
            placeholder_wheel(scratch, "jedi"),
        ]
        say("pi_course 的 wheel、参考笔记本和一份新的练习副本")
        source = contents(scratch)
        lite_dir = scratch / "lite-dir"
        lite_dir.mkdir()
        # Markdown opens rendered (LEARNING.md), and the theme follows the system's light or dark.
        shutil.copy2(HERE / "overrides.json", lite_dir / "overrides.json")
        shutil.rmtree(output, ignore_errors=True)
        say("jupyter lite build")
        run(
            bin_dir / "jupyter", "lite", "build", "--lite-dir", lite_dir, "--output-dir", output,
            "--contents", source, "--apps", "lab", "--no-sourcemaps", "--no-unused-shared-packages",
            cwd=lite_dir, env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
        )  # fmt: skip
        static = output / "static" / "pyodide"
        shutil.rmtree(static, ignore_errors=True)
        static.mkdir(parents=True)
        for name in PYODIDE_RUNTIME:
            shutil.copy2(runtime / name, static / name)
        missing = write_lock(runtime, all_wheels, static)
    # Icon fonts in legacy formats (SVG, EOT, TTF) beside a WOFF2 of the same name: the browsers
    # this edition supports (Chromium family) only ever load the WOFF2; 2.5 MB saved.
    for font in output.glob("build/*.*"):
        if font.suffix in (".svg", ".eot", ".ttf") and font.with_suffix(".woff2").is_file():
            font.unlink()
    # The PyPI shims the kernel extension carries are served from the lock instead.
    for stray in output.glob("extensions/@jupyterlite/pyodide-kernel-extension/static/pypi"):
        shutil.rmtree(stray)
    configure(output)
    # The site's index: a Chinese landing page instead of JupyterLite's redirect to the Launcher.
    shutil.copy2(HERE / "index.html", output / "index.html")
    add_boot_script(output / "lab")
    add_icons(output)
    figures = report(output)
    figures["undeclared_dependencies"] = missing
    (BUILD / "lite-report.json").write_text(json.dumps(figures, indent=2) + "\n")
    shown = output.relative_to(ROOT) if output.is_relative_to(ROOT) else output
    say(f"站点 {shown} 共 {figures['site_mb']} MB，{figures['files']} 个文件（不含 source map）")
    for name, size in figures["largest"]:  # type: ignore[attr-defined]
        say(f"  {size:6.2f} MB  {name}")
    to_do = unexpected(missing)
    if to_do:  # a wheel needs what the site does not hold: the browser would fail to import it
        say(
            "这些 wheel 需要的包不在站点里："
            + "、".join(to_do)
            + "。把它们固定版本写进 tools/lite/requirements.txt"
            "（或者确实不需要时，加进 tools/build_lite.py 的 LEFT_OUT，并在 requirements.txt 里写明原因）"
        )
    say("试一试：make serve-lite（在 127.0.0.1 的一个空闲端口上提供这个站点，并打印地址）")
    return 0


if __name__ == "__main__":
    sys.exit(main())
