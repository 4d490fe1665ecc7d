"""Run one fuzz target under atheris (libFuzzer): ``python -m fuzz.run TARGET [libFuzzer args]``.

* mariabinlog's modules are imported under ``atheris.instrument_imports`` so libFuzzer sees
  their branch coverage (the compiled fast paths report theirs when built with
  ``-fsanitize=fuzzer-no-link``, see ``scripts/fuzz.sh``).
* ``MARIABINLOG_FUZZ_NATIVE=DIR`` loads ``_rowsfast`` and ``_dumpfast`` from ``DIR`` (the
  sanitizer build) instead of the package's own build; run it with the sanitizer runtime
  preloaded (``LD_PRELOAD=.../asan_with_fuzzer.so``), which also makes libFuzzer's
  ``-malloc_limit_mb`` see every allocation the interpreter hands to ``malloc``.
* The custom mutator repairs checksums (:mod:`fuzz.checksums`) after seven mutations in eight,
  so most inputs pass the CRC checks and reach the decoders behind them; the eighth keeps the
  damage, so the checks themselves stay under test.
* An exception that is not a :class:`~mariabinlog.errors.MariabinlogError` is a crash (atheris
  prints it and libFuzzer saves the input); so are a hang past ``-timeout`` and, with the
  sanitizer runtime, an allocation past ``-malloc_limit_mb``.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import logging
import os
import pkgutil
import sys
from pathlib import Path
from typing import Any

import atheris

class _NativeFinder:
    """Finds compiled modules in the sanitizer build folder first: ``scripts/fuzz.sh`` builds
    each C extension there as ``<dotted module name><suffix>``."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if not name.startswith("mariabinlog."):
            return None
        location = os.path.join(self.folder, name + importlib.machinery.EXTENSION_SUFFIXES[0])
        if not os.path.exists(location):
            return None
        loader = importlib.machinery.ExtensionFileLoader(name, location)
        return importlib.util.spec_from_file_location(name, location, loader=loader)


def load(target_name: str) -> Any:
    """Import the targets, with the mariabinlog packages the target exercises instrumented
    (imported under ``atheris.instrument_imports`` before anything else imports them)."""
    native = os.environ.get("MARIABINLOG_FUZZ_NATIVE")
    if native:
        sys.meta_path.insert(0, _NativeFinder(native))
    spec = importlib.util.find_spec("fuzz.targets")
    assert spec is not None and spec.origin is not None
    packages = _packages_of(spec.origin, target_name)
    with atheris.instrument_imports(include=packages):
        for package in packages:
            module = importlib.import_module(package)
            for info in pkgutil.walk_packages(getattr(module, "__path__", []), package + "."):
                if not info.name.rsplit(".", 1)[1].startswith("_"):
                    importlib.import_module(info.name)
    from fuzz import targets

    if native:
        built = {f.rsplit(".", 2)[0] for f in os.listdir(native) if f.endswith(importlib.machinery.EXTENSION_SUFFIXES[0])}
        for name in sorted(built):
            module = importlib.import_module(name)
            if not (module.__file__ or "").startswith(native):
                raise SystemExit(f"{name} was not loaded from the sanitizer build in {native}")

    return targets


def _packages_of(source: str, target_name: str) -> list[str]:
    """The ``packages`` of a target, read from the targets' source without importing it
    (importing it would import mariabinlog uninstrumented)."""
    import ast

    tree = ast.parse(open(source, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and getattr(deco.func, "id", "") == "target"
                    and deco.args
                    and ast.literal_eval(deco.args[0]) == target_name
                ):
                    for keyword in deco.keywords:
                        if keyword.arg == "packages":
                            return [f"mariabinlog.{p}" for p in ast.literal_eval(keyword.value)]
                    return ["mariabinlog.codec"]
    raise SystemExit(f"unknown target {target_name!r}")


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1].startswith("-"):
        raise SystemExit("usage: python -m fuzz.run TARGET [libFuzzer options] [corpus dirs]")
    name = argv[1]
    logging.disable(logging.CRITICAL)  # the library logs what it skips; a campaign does not read it
    targets = load(name)
    if name not in targets.TARGETS:
        raise SystemExit(f"unknown target {name!r}; targets: {', '.join(targets.TARGETS)}")
    target = targets.TARGETS[name]
    from mariabinlog.errors import MariabinlogError

    run = target.run

    def test_one_input(data: bytes) -> None:
        try:
            run(data)
        except MariabinlogError:
            pass

    fix = target.fix

    def mutate(data: bytes, max_size: int, seed: int) -> bytes:
        data = atheris.Mutate(data, max_size)
        if fix is not None and seed & 7:
            data = fix(data)[:max_size]
        return data

    # Warm up before the clock starts: the first runs import lazily (pandas for the Spark
    # views) or build fixtures (serve's archive, written by the engine), which under load took
    # longer than -timeout and was reported as a hang of whatever input came first.
    seeds = sorted(Path(__file__).resolve().parent.joinpath("seeds", name).glob("*"), key=lambda p: p.stat().st_size)
    for warm in [b""] + [p.read_bytes() for p in seeds[:2]]:
        test_one_input(warm)
    args = [argv[0]] + argv[2:]
    if not any(a.startswith("-max_len=") for a in args):
        args.append(f"-max_len={target.max_len}")
    atheris.Setup(args, test_one_input, custom_mutator=mutate if fix is not None else None)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
