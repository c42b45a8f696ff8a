#!/usr/bin/env python3
"""Builds the Debian packages from this build (cpack, reusing the build: nothing is
compiled) and inspects them: file names, control fields, that every shared library the
binaries need is covered by Depends, the maintainer scripts and conffiles, and the files and
their paths. With HOSTLM_TEST_DPKG_INSTALL=1, as root, it also installs them with dpkg on
this machine, runs the installed hostlm, then removes and purges them again."""
import argparse
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from install_support import Checks, clean_env, is_elf, run

ARCH = "amd64"


def control_fields(text):
    fields, key = {}, None
    for line in text.splitlines():
        if line.startswith(" ") and key:
            fields[key] += "\n" + line.strip()
        elif ":" in line:
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    return fields


def depends_packages(depends):
    """Package names named in a Depends field (alternatives included)."""
    return {re.split(r"[\s(:]", alt.strip())[0] for dep in depends.split(",")
            for alt in dep.split("|") if alt.strip()}


def owning_package(soname):
    """The Debian package holding the library the loader would use for soname, or None."""
    for line in run(["ldconfig", "-p"], check=False, quiet=True).stdout.splitlines():
        if line.strip().startswith(soname + " ") and "x86-64" in line:
            path = line.split("=>")[-1].strip()
            for candidate in (path, os.path.realpath(path)):
                p = run(["dpkg", "-S", candidate], check=False, quiet=True)
                if p.returncode == 0:
                    return p.stdout.split(":")[0].strip()
    return None


def needed(path):
    out = run(["readelf", "-d", path], quiet=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def inspect(c, deb, tmp, name, version):
    """Control fields and files of one package; returns (fields, extracted root)."""
    info = run(["dpkg-deb", "-I", deb]).stdout
    fields = control_fields(run(["dpkg-deb", "-f", deb]).stdout)
    c.check(fields.get("Package") == name, f"{deb.name}: Package {fields.get('Package')}")
    c.check(fields.get("Version") == version, f"{deb.name}: Version {fields.get('Version')}")
    c.check(fields.get("Architecture") == ARCH, f"{deb.name}: Architecture {fields.get('Architecture')}")
    c.check(bool(fields.get("Maintainer")) and bool(fields.get("Description")),
            f"{deb.name}: Maintainer and Description set")
    root = tmp / ("x-" + name)
    run(["dpkg-deb", "-x", deb, root])
    listing = run(["dpkg-deb", "-c", deb]).stdout
    c.check(all(" root/root " in l for l in listing.splitlines()), f"{deb.name}: every file owned by root")
    c.check("./usr/local" not in listing and "/_CPack_Packages" not in listing,
            f"{deb.name}: no /usr/local or staging paths")
    print(info)
    return fields, root, listing


def check_depends_cover_libraries(c, deb_name, fields, root):
    """Every NEEDED library of every ELF file in the package comes from a package in Depends
    (or from the package itself)."""
    deps = depends_packages(fields.get("Depends", ""))
    shipped = {p.name for p in root.rglob("*.so*")}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and is_elf(path):
            for soname in needed(path):
                if soname in shipped:
                    continue
                owner = owning_package(soname)
                c.check(owner is not None and owner.split(":")[0] in deps,
                        f"{deb_name}: {path.name} needs {soname} from {owner}, in Depends")


def installed_status(pkg):
    p = run(["dpkg-query", "-W", "-f=${Status}", pkg], check=False)
    return p.stdout.strip() if p.returncode == 0 else ""


def dpkg_install_cycle(c, debs, source, version, tmp):
    """dpkg -i, use, dpkg -r, dpkg -P; always leaves the packages purged."""
    model = source / "tests/data/models/tiny-tied-f32"
    names = [n for n, _ in debs]
    home = tmp / "home"
    home.mkdir()
    env = clean_env(home)
    try:
        run(["dpkg", "-i"] + [d for _, d in debs], timeout=300)
        for n in names:
            c.check(installed_status(n) == "install ok installed", f"dpkg -i: {n} installed")
        flag = run(["/usr/bin/hostlm", "--version"], env=env, cwd=tmp).stdout
        c.check(flag.startswith(f"hostlm {version} (commit "), f"installed hostlm --version: {flag.strip()}")
        c.check(flag == run(["/usr/bin/hostlm", "version"], env=env, cwd=tmp).stdout,
                "installed --version equals `hostlm version`")
        plugins = json.loads(run(["/usr/bin/hostlm", "plugins", "--json"], env=env, cwd=tmp).stdout)
        libs = [q["library"] for q in plugins["plugins"] if q["name"] == "qwen35"]
        c.check(len(libs) == 1 and libs[0].startswith("/usr/lib") and libs[0].endswith(
            "hostlm/plugins/libhostlm_qwen35.so") and os.path.isfile(libs[0]),
            f"installed registry finds the packaged qwen35 plugin: {libs}")
        out = run(["/usr/bin/hostlm", "run", model, "--tokens", "1,2,3", "-n", "4", "--temp", "0"],
                  env=env, cwd=tmp, check=False)
        c.check(out.returncode == 0 and len(out.stdout.strip().split(",")) == 4,
                f"installed hostlm run --tokens: {out.stdout.strip()} {out.stderr.strip()}")
        if "hostlm-cuda" in names:
            cuda = json.loads(run(["/usr/bin/hostlm", "version", "--json"], env=env).stdout)["backends"]["cuda"]
            c.check(cuda == "available" or "could not be loaded" not in cuda,
                    f"packaged CUDA library found (no GPU or driver is fine): {cuda}")
        try:
            user = pwd.getpwnam("hostlm")
            c.check(user.pw_dir == "/var/lib/hostlm" and user.pw_shell.endswith("nologin"),
                    f"system user hostlm: home {user.pw_dir}, shell {user.pw_shell}")
            st = os.stat("/var/lib/hostlm/models")
            c.check(st.st_uid == user.pw_uid and stat.S_IMODE(st.st_mode) == 0o750,
                    "/var/lib/hostlm/models owned by hostlm, mode 0750")
            st = os.stat("/etc/default/hostlm")
            c.check(st.st_uid == 0 and st.st_gid == user.pw_gid and stat.S_IMODE(st.st_mode) == 0o640,
                    "/etc/default/hostlm is root:hostlm 0640: the service reads it, others do not")
        except KeyError:
            c.check(False, "postinst created the system user hostlm")
        except FileNotFoundError:
            c.check(False, "postinst created /var/lib/hostlm/models")
        wants = "/etc/systemd/system/multi-user.target.wants/hostlm.service"
        if shutil.which("deb-systemd-helper"):
            c.check(os.path.islink(wants), f"postinst enabled the service ({wants})")
        if shutil.which("systemd-analyze"):
            v = run(["systemd-analyze", "verify", "/lib/systemd/system/hostlm.service"], cwd=tmp,
                    check=False)
            said = (v.stdout + v.stderr).strip()
            c.check(v.returncode == 0 and not said, f"systemd-analyze verify on the packaged unit {said}")

        run(["dpkg", "-r"] + names[::-1])
        c.check(not os.path.exists("/usr/bin/hostlm"), "dpkg -r removes /usr/bin/hostlm")
        c.check(installed_status("hostlm") == "deinstall ok config-files" and
                os.path.exists("/etc/default/hostlm"), "dpkg -r keeps the conffile /etc/default/hostlm")
        run(["dpkg", "-P"] + names[::-1])
        c.check(not os.path.exists("/etc/default/hostlm"), "dpkg -P removes /etc/default/hostlm")
        c.check(not os.path.exists("/var/lib/hostlm"), "dpkg -P removes /var/lib/hostlm")
        c.check(not os.path.lexists(wants), "dpkg -P removes the service's enablement")
        c.check(run(["dpkg-statoverride", "--list", "/etc/default/hostlm"], check=False).returncode != 0,
                "dpkg -P removes the settings file's statoverride")
        c.check(run(["getent", "passwd", "hostlm"], check=False).returncode == 2,
                "dpkg -P removes the hostlm user")
    finally:
        if any(installed_status(n) for n in names):
            run(["dpkg", "-P"] + names[::-1], check=False)


def main():
    p = argparse.ArgumentParser()
    for opt in ("--build", "--source", "--cpack", "--version"):
        p.add_argument(opt, required=True)
    a = p.parse_args()
    build, source, version = Path(a.build), Path(a.source), a.version
    c = Checks("Package.Deb")
    tmp = Path(tempfile.mkdtemp(prefix="hostlm-deb-"))
    try:
        out = tmp / "packages"
        t0 = time.monotonic()
        run([a.cpack, "-G", "DEB", "--config", build / "CPackConfig.cmake", "-B", out], cwd=tmp,
            timeout=600)
        print(f"cpack took {time.monotonic() - t0:.1f} s")
        debs = sorted(p.name for p in out.glob("*.deb"))
        want = {"hostlm": f"hostlm_{version}_{ARCH}.deb"}
        if (build / "lib/libhostlm_cuda.so").exists():
            want["hostlm-cuda"] = f"hostlm-cuda_{version}_{ARCH}.deb"
        else:
            print("hostlm-cuda: not built (this build has no CUDA backend)")
        c.check(debs == sorted(want.values()), f"packages built: {debs}")

        main_deb = out / want["hostlm"]
        fields, root, listing = inspect(c, main_deb, tmp, "hostlm", version)
        deps = depends_packages(fields.get("Depends", ""))
        c.check({"libc6", "libstdc++6", "passwd", "procps"} <= deps, f"hostlm Depends: {fields.get('Depends')}")
        check_depends_cover_libraries(c, main_deb.name, fields, root)
        for rel in ("usr/bin/hostlm", "usr/lib/libhostlm.so", "usr/include/hostlm.h",
                    "usr/include/hostlm/registry.h", "usr/lib/hostlm/plugins/libhostlm_qwen35.so",
                    "usr/share/hostlm/manifests/qwen35.json", "usr/share/doc/hostlm/README.md",
                    "usr/share/doc/hostlm/docs/cuda-tuning.md",
                    "lib/systemd/system/hostlm.service", "etc/default/hostlm"):
            c.check((root / rel).is_file(), f"hostlm package has /{rel}")
        c.check(not list(root.rglob("libhostlm_cuda.so")), "the CUDA library is not in the hostlm package")
        if (source / "adapters/comfyui").is_dir():
            c.check((root / "usr/share/hostlm/comfyui").is_dir(), "hostlm package has the ComfyUI package")
        unit = (root / "lib/systemd/system/hostlm.service").read_text()
        c.check("ExecStart=/usr/bin/hostlm serve --config /etc/default/hostlm" in unit,
                "packaged unit names /usr/bin and /etc")
        c.check(stat.S_IMODE((root / "etc/default/hostlm").stat().st_mode) == 0o600,
                "/etc/default/hostlm is mode 0600")

        control = tmp / "control"
        run(["dpkg-deb", "-e", main_deb, control])
        conffiles = (control / "conffiles").read_text().split() if (control / "conffiles").exists() else []
        c.check(conffiles == ["/etc/default/hostlm"], f"conffiles: {conffiles}")
        for script in ("postinst", "prerm", "postrm"):
            path = control / script
            c.check(path.is_file() and os.access(path, os.X_OK), f"maintainer script {script}")
            if path.is_file():
                c.check(run(["sh", "-n", path], check=False).returncode == 0, f"{script} parses")

        if "hostlm-cuda" in want:
            cuda_deb = out / want["hostlm-cuda"]
            cf, croot, _ = inspect(c, cuda_deb, tmp, "hostlm-cuda", version)
            c.check(f"hostlm (= {version})" in cf.get("Depends", ""), f"hostlm-cuda Depends: {cf.get('Depends')}")
            files = sorted(str(p.relative_to(croot)) for p in croot.rglob("*") if p.is_file())
            c.check(files == ["usr/lib/libhostlm_cuda.so"], f"hostlm-cuda holds the CUDA library only: {files}")

        if os.environ.get("HOSTLM_TEST_DPKG_INSTALL") != "1":
            print("dpkg -i not tried: set HOSTLM_TEST_DPKG_INSTALL=1 (as root) to install the packages here")
        elif os.geteuid() != 0:
            c.check(False, "HOSTLM_TEST_DPKG_INSTALL=1 needs root to run dpkg -i")
        elif installed_status("hostlm") or run(["getent", "passwd", "hostlm"], check=False).returncode == 0:
            print("dpkg -i not tried: a hostlm package or user already exists on this machine; "
                  "it is left alone")
        else:
            dpkg_install_cycle(c, [(n, out / f) for n, f in want.items()], source, version, tmp)
    except Exception as e:
        c.check(False, str(e))
    code = c.finish()
    if code == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {tmp} for inspection", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
