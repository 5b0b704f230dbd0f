"""The installed package: cmake --install into a temporary prefix, then Debian's way
of importing it (the prefix's dist-packages), with $PEERCACHE_LIB unset, so the
package must find the library installed beside it. And pip's offline install."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import common

PROBE = ("import peercache, peercache._lib as L, peercache.store as S; "
         "print(L.library_path()); print(L.version()); print(S.PeerCacheStore.__name__)")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PEERCACHE_LIB", "PYTHONPATH", "LD_LIBRARY_PATH")}
    env.update(extra)
    return env


class Installed(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pcpyinstall-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_cmake_install(self):
        build, cmake = os.environ.get("PEERCACHE_BUILD_DIR"), os.environ.get("CMAKE_COMMAND")
        if not build or not cmake:
            self.skipTest("PEERCACHE_BUILD_DIR / CMAKE_COMMAND not set (ctest sets them)")
        prefix = os.path.join(self.tmp, "prefix")
        subprocess.run([cmake, "--install", build, "--prefix", prefix], check=True,
                       stdout=subprocess.DEVNULL)
        pydir = os.path.join(prefix, os.environ["PEERCACHE_PYDIR"])
        self.assertTrue(os.path.isfile(os.path.join(pydir, "peercache", "store.py")))
        out = subprocess.run([sys.executable, "-c", PROBE], cwd=self.tmp, check=True,
                             capture_output=True, text=True,
                             env=clean_env(PYTHONPATH=pydir)).stdout.split()
        self.assertTrue(os.path.realpath(out[0]).startswith(os.path.realpath(prefix)), out[0])
        self.assertRegex(out[1], r"^0\.\d+\.\d+$")
        self.assertEqual(out[2], "PeerCacheStore")

    def test_pip_offline(self):
        # asked of a fresh interpreter: setuptools after torch's distutils fails to import
        if subprocess.run([sys.executable, "-c", "import pip, setuptools"],
                          capture_output=True).returncode:
            self.skipTest("pip or setuptools not installed for %s" % sys.executable)
        src = os.path.join(self.tmp, "src")
        shutil.copytree(os.path.join(common.HERE, "..", "..", "python"), src,
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        target = os.path.join(self.tmp, "site")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                        "--no-deps", "--no-index", "--target", target, src], check=True,
                       env=clean_env(PIP_DISABLE_PIP_VERSION_CHECK="1"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lib = os.environ.get("PEERCACHE_LIB")
        env = clean_env(PYTHONPATH=target, **({"PEERCACHE_LIB": lib} if lib else {}))
        out = subprocess.run([sys.executable, "-c", PROBE], cwd=self.tmp, check=True,
                             capture_output=True, text=True, env=env).stdout.split()
        self.assertEqual(out[2], "PeerCacheStore")


if __name__ == "__main__":
    unittest.main()
