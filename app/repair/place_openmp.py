"""`place-libomp140`: the OpenMP runtime torch 2.3-2.5 asks for, placed in its own folder from a checked source."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from app.cancel import CancelToken
from app.i18n import LANGUAGES, words
from app.inventory.environment import PythonEnvironment
from app.inventory.machine import LIBOMP140, MachineFacts
from app.probes.finding import Finding
from app.repair.changes.files import PutFile
from app.repair.journal import Transaction
from app.repair.openmp_candidate import check_candidate, refusal_text
from app.repair.plan import Change, Plan, PlanRefused, said
from app.resources import download_catalog
from app.sources.pip_settings import read_pip_settings
from app.system.base import System
from app.system.folders import child


class PlaceOpenMP:
    """`place-libomp140`: an OpenMP runtime into this environment's torch\\lib as libomp140.x86_64.dll.
    Sources, best first: the user's own Visual Studio copy, the Intel runtime torch ships, then Intel's runtime
    downloaded from the user's package index (resources/catalog.json: a pinned, signed build)."""

    id = "place-libomp140"
    sources = ("vs", "torch-bundled", "intel-openmp")

    def candidates(self, system: System, env: PythonEnvironment, machine: MachineFacts) -> dict[str, list[Path]]:
        lib = child(env.torch.folder, "lib") if env.torch else None
        bundled = child(lib, "libiomp5md.dll") if lib else None
        return {"vs": [p for vs in machine.visual_studio for p in vs.libomp140],
                "torch-bundled": [bundled] if bundled else []}

    def plan(self, system: System, env: PythonEnvironment, machine: MachineFacts, findings: list[Finding],
             source: Optional[str]) -> Plan:
        if env.torch is None or child(env.torch.folder, "lib") is None:
            raise PlanRefused([said("repair.refused.no_torch")])
        lib = child(env.torch.folder, "lib")
        if source is not None and source not in self.sources:
            raise PlanRefused([said("repair.refused.unknown_source", source=source,
                                     sources=", ".join(self.sources))])
        found = self.candidates(system, env, machine)
        refusals: list[dict[str, str]] = []
        for name in [source] if source else self.sources:
            if name == "intel-openmp":  # checked when it arrives: pinned hash, Intel's signature, the same check
                settings = read_pip_settings(system, env.exec_prefix)
                if not settings.indexes:  # only HTTPS indexes are used: not offered, and said why
                    refusals.append(said("download.error.index-not-https", url=", ".join(settings.skipped_indexes)))
                    continue
                skipped = [said("repair.note.index_skipped", url=url, next=settings.indexes[0])
                           for url in settings.skipped_indexes]
                target = lib / LIBOMP140
                existing = child(lib, LIBOMP140)
                entry = download_catalog()["intel_openmp"]
                change = Change("replace-file" if existing else "create-file", system.windows_path(target),
                                f"{entry['package']} {entry['version']}", host_target=existing or target)
                return Plan(self.id, name, system.windows_path(env.python), [change],
                            download_bytes=entry["member_download_bytes"], downloads=True,
                            download={"pip_prefix": str(env.exec_prefix)},
                            notes=[said("repair.note.source.intel"), *skipped])
            for path in found[name]:
                check = check_candidate(path, lib)
                if check.ok:
                    target = lib / LIBOMP140
                    existing = child(lib, LIBOMP140)
                    change = Change("replace-file" if existing else "create-file", system.windows_path(target),
                                    system.windows_path(path), host_target=existing or target, host_source=path)
                    return Plan(self.id, name, system.windows_path(env.python), [change],
                                notes=[said(f"repair.note.source.{name}")])
                for refusal in check.reasons:
                    refusals.append({lang: words("repair.refused.candidate", lang, path=system.windows_path(path),
                                                 reason=refusal_text(refusal, lang)) for lang in LANGUAGES})
        if not refusals:
            raise PlanRefused([said("repair.refused.no_source", source=source or "-")])
        raise PlanRefused(refusals)

    def apply(self, system: System, plan: Plan, transaction: Transaction,
              on_output: Callable[[str], None] = lambda line: None, on_progress=None,
              token: Optional[CancelToken] = None) -> None:
        for change in plan.changes:
            source, digest = change.host_source, None
            if source is None:  # intel-openmp: download, verify, check, then place like any other source
                from app.sources.intel_openmp import fetch_runtime

                settings = read_pip_settings(system, Path(plan.download["pip_prefix"]))
                source, facts = fetch_runtime(system, settings, transaction.folder / "downloads",
                                              progress=on_progress, token=token)
                transaction.note({"kind": "downloaded", **facts})
                check = check_candidate(source, change.host_target.parent)
                if not check.ok:
                    raise PlanRefused([{lang: refusal_text(check.reasons[0], lang) for lang in LANGUAGES}])
                digest = facts["sha256"]  # the pinned hash it was just checked against
            transaction.step(system, PutFile(change.host_target, source, sha256=digest))
