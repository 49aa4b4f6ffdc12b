"""Probes: one module per question asked of a machine or an environment; each yields Findings."""

from app.probes import (
    dependencies,
    gpu,
    install_paths,
    integrity,
    known_builds,
    openmp,
    paging_file,
    path_setting,
    replay,
    variables,
    vc_runtime,
)

ALL_PROBES = (
    replay.PROBE,
    dependencies.PROBE,
    vc_runtime.PROBE,
    openmp.PROBE,
    openmp.SWITCH_PROBE,
    known_builds.PROBE,
    known_builds.PYTHON_PROBE,
    path_setting.PROBE,
    integrity.PROBE,
    install_paths.PROBE,
    gpu.PROBE,
    paging_file.PROBE,
    variables.PROBE,
)
