"""Package layout. The public import name is ``fpgashare``; its sources stay in the folders the
design card names, mapped with ``package_dir``. Subpackages are found, not listed, so a new one
can never be left out of the wheel (it once shipped without ``sched`` and ``backends``)."""

from setuptools import find_packages, setup

#: import name -> folder in the checkout
ROOTS = {
    "fpgashare": "runtime",                    # the runtime: scheduler, backends, daemon, client, CLI
    "fpgashare.hdl_sim": "hdl_sim",            # the simulated board: RTL, harness, build cache
    "fpgashare.apps": "apps",                  # example apps (the demo runs them)
    "fpgashare.platforms": "bitstreams",       # platform manifests, addressable by name
    "fpgashare.suites": "benchmarks/workloads",  # bench suites, addressable by name
    "fpgashare.systemd": "systemd",            # the unit files for a board
}


def discover() -> tuple[list[str], dict[str, str]]:
    packages, package_dir = [], {}
    for name, folder in ROOTS.items():
        packages.append(name)
        package_dir[name] = folder
        for sub in find_packages(folder, exclude=["build", "build.*"]):
            packages.append(f"{name}.{sub}")
            package_dir[f"{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
    return packages, package_dir


packages, package_dir = discover()
setup(packages=packages, package_dir=package_dir)
