"""`pip install .` gives the `box` command (the same as ./box in a checkout)."""

import re
import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
VERSION = re.search(r'__version__ = "([^"]+)"', (HERE / "imdbox" / "__init__.py").read_text()).group(1)


class BuildPy(build_py):
    """Ship seccomp.json inside the package: runflags.seccomp_path() looks next to runflags.py."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "imdbox" / "seccomp.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(HERE / "seccomp.json", target)


setup(
    name="imd-box",
    version=VERSION,
    description="Run the IMD worker in a walled Docker container that sees only the internet.",
    url="https://github.com/Identity-md/box",
    license="MIT",
    python_requires=">=3.9",
    packages=find_packages(include=["imdbox", "imdbox.*"]),
    package_data={"imdbox.check": ["probe/*.mjs"]},  # box check's in-box probes, in parts
    install_requires=[line.strip() for line in (HERE / "requirements.txt").read_text().splitlines() if line.strip()],
    entry_points={"console_scripts": ["box = imdbox.cli:main"]},
    cmdclass={"build_py": BuildPy},
)
