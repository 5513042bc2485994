"""A build step pyproject.toml names (``[tool.setuptools.cmdclass]``): every build starts
from an empty ``build/lib``. Used by setuptools when the package is built, never imported by
agent-exam itself.

pip builds a wheel inside the checkout, and setuptools copies the sources into ``build/lib``
without ever emptying it: a module or migration deleted since the last ``pip install`` from
the same clone (an upgrade, docs/deployment.md section 8) would still be installed.
"""

import shutil

from setuptools.command.build_py import build_py


class FreshBuildPy(build_py):
    def run(self):
        if not getattr(self, "editable_mode", False):  # an editable install builds elsewhere
            shutil.rmtree(self.build_lib, ignore_errors=True)
        super().run()

