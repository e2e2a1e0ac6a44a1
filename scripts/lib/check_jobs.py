"""The checks of scripts/check-jobs, which installs kubernetes-validate and runs this with
the repository's root as its argument: every form of the schedule in Jobs/ works (see the
comment at the top of scripts/check-jobs)."""
import copy, json, os, re, shlex, shutil, subprocess, sys, tempfile, time
import yaml

ROOT = sys.argv[1]
JOBS = os.path.join(ROOT, "Jobs")
STOP_GRACE_DEFAULT = 20          # HERALD_STOP_GRACE_SECONDS' default (docs/operators.md)
HERALD_BIN = "/usr/local/bin/herald"              # where the archive and the image put it
REGISTRY_IMAGE = "registry.example.com/herald:"   # + the release number
problems = []
figures = []


def problem(text):
    problems.append(text)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---------------------------------------------------------------- env file
# One grammar that /bin/sh and systemd's EnvironmentFile= read alike.
ENV_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=([A-Za-z0-9_./:@?=,+%-]*|'[^'\n]*')$")


def parse_env_file(text, name, report=True):
    values = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = ENV_LINE.match(line)
        if not m:
            if report:
                problem(f"{name}:{n}: not a KEY=value line that /bin/sh and systemd read alike: {line!r}")
            continue
        value = m.group(2)
        if value.startswith("'"):
            value = value[1:-1]
        values[m.group(1)] = value
    return values


env_example = parse_env_file(read(os.path.join(JOBS, "env.example")), "Jobs/env.example")
if "DATABASE_URL" not in env_example:
    problem("Jobs/env.example: no DATABASE_URL")


# ---------------------------------------------------------------- crontab
CRON_ENV = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")
CRON_FIELD = re.compile(r"^[0-9*/,-]+$|^[0-9A-Za-z*/,-]+$")


def parse_crontab(text):
    env, commands = {}, []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = CRON_ENV.match(line)
        if m and not line.lstrip()[0].isdigit() and not line.lstrip().startswith("*"):
            value = m.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            env[m.group(1)] = value
            continue
        parts = line.split(None, 6)
        if len(parts) < 7 or not all(CRON_FIELD.match(p) for p in parts[:5]):
            problem(f"Jobs/crontab:{n}: neither a setting nor '<5 time fields> <user> <command>' (an /etc/cron.d line)")
            continue
        if "%" in parts[6].replace("\\%", ""):
            problem(f"Jobs/crontab:{n}: cron turns an unescaped % into a newline")
        commands.append((parts[5], parts[6]))
    return env, commands


def run_cron_command(cron_env, command, shell, env_text):
    """Runs the command as cron would (SHELL -c, a bare environment plus the
    crontab's settings) with every /etc/herald, /usr/local/bin and
    /var/log/herald path moved under a temporary root. Returns what the
    stand-in herald (at /usr/local/bin/herald) saw: its arguments, working
    directory and environment."""
    with tempfile.TemporaryDirectory(prefix="check-jobs-cron-") as t:
        def moved(s):
            for p in ("/etc/herald", "/usr/local/bin", "/var/log/herald"):
                s = s.replace(p, t + p)
            return s
        for d in ("etc/herald/credentials", "usr/local/bin", "var/log/herald"):
            os.makedirs(os.path.join(t, d))
        with open(os.path.join(t, "etc/herald/env"), "w") as f:
            f.write(env_text)
        stand_in = t + HERALD_BIN
        with open(stand_in, "w") as f:
            f.write('#!/bin/sh\nprintf "ARGS=%s\\n" "$*"\nprintf "PWD=%s\\n" "$(pwd)"\nenv\n')
        os.chmod(stand_in, 0o755)
        env = {"HOME": t, "LOGNAME": "herald", "SHELL": shell, "PATH": "/usr/bin:/bin"}
        for k, v in cron_env.items():
            env[k] = moved(v)
            if v.startswith("/etc/herald/credentials/"):
                with open(moved(v), "w") as f:
                    f.write("not a real secret\n")
        r = subprocess.run([shell, "-c", moved(command)], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=20)
        log = os.path.join(t, "var/log/herald/run.log")
        seen = {}
        if os.path.exists(log):
            for line in read(log).splitlines():
                k, sep, v = line.partition("=")
                if sep:
                    seen[k] = v
        expected = {**env_example, **{k: moved(v) for k, v in cron_env.items()}}
        expected["ARGS"] = "run"
        missing = sorted(k for k, v in expected.items() if seen.get(k) != v)
        return r.returncode, r.stderr.strip().splitlines()[0][:200] if r.stderr.strip() else "", missing


cron_env, cron_commands = parse_crontab(read(os.path.join(JOBS, "crontab")))
shells = ["/bin/sh"] + [s for s in ("/bin/dash", "/bin/bash")
                        if os.path.exists(s) and os.path.realpath(s) != os.path.realpath("/bin/sh")]
if len(cron_commands) != 1:
    problem(f"Jobs/crontab: expected one command line, found {len(cron_commands)}")
else:
    user, command = cron_commands[0]
    if user != "herald":
        problem(f"Jobs/crontab: runs as {user!r}, not herald")
    for var in ("APNS_KEY_PATH", "HERALD_REPLY_SECRET_FILE", "DATABASE_PASSWORD_FILE"):
        if var not in cron_env and var not in env_example:
            problem(f"Jobs/crontab: {var} is set nowhere")
    # A run that hangs is stopped as systemd would: SIGTERM, then SIGKILL only
    # after more than the stop grace.
    m = re.search(r"\btimeout\b.*--kill-after=(\d+)s?\b", command)
    grace = float(env_example.get("HERALD_STOP_GRACE_SECONDS", STOP_GRACE_DEFAULT))
    if not m or "--preserve-status" not in command:
        problem("Jobs/crontab: the run is not under `timeout --preserve-status --kill-after=…`")
    elif float(m.group(1)) <= grace:
        problem(f"Jobs/crontab: --kill-after={m.group(1)}s must exceed the stop grace ({grace:g} s)")
    env_text = read(os.path.join(JOBS, "env.example"))
    for shell in shells:
        rc, err, missing = run_cron_command(cron_env, command, shell, env_text)
        if rc != 0 or missing:
            problem(f"Jobs/crontab under {shell}: exit {rc}{', ' + err if err else ''}; "
                    f"herald did not get {', '.join(missing) or 'everything'}")
    # The same line without `set -a … set +a` (the old one) must fail the check.
    broken = re.sub(r"set [-+]a;\s*", "", command)
    _, _, missing = run_cron_command(cron_env, broken, "/bin/sh", env_text)
    if not missing:
        problem("check-jobs: the crontab check passed a line that does not export the env file")
    figures.append(f"crontab under {len(shells)} shell{'s' if len(shells) > 1 else ''}")


# ---------------------------------------------------------------- systemd
def unit_settings(text):
    section, out = None, []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("#", ";")):
            continue
        if s.startswith("["):
            section = s.strip("[]")
            continue
        k, _, v = s.partition("=")
        out.append((section, k.strip(), v.strip()))
    return out


def seconds(value):
    total = 0.0
    for n, unit in re.findall(r"(\d+(?:\.\d+)?)\s*(min|ms|s|h)?", value):
        total += float(n) * {"min": 60, "h": 3600, "ms": 0.001}.get(unit, 1)
    return total


def verify_units(names, unit_texts, tmp):
    """systemd-analyze verify under a temporary root holding the system's own
    units (for the targets) and stand-ins for every ExecStart binary."""
    r = os.path.join(tmp, "root")
    system_dir = next(d for d in ("/usr/lib/systemd/system", "/lib/systemd/system") if os.path.isdir(d))
    shutil.copytree(system_dir, r + "/usr/lib/systemd/system", symlinks=True)
    os.makedirs(r + "/etc/systemd/system")
    for name, text in unit_texts.items():
        with open(r + "/etc/systemd/system/" + name, "w") as f:
            f.write(text)
        for section, k, v in unit_settings(text):
            if k.startswith("Exec"):
                path = v.lstrip("-@:+!").split()[0]
                os.makedirs(os.path.dirname(r + path), exist_ok=True)
                with open(r + path, "w") as f:
                    f.write("#!/bin/sh\n")
                os.chmod(r + path, 0o755)
            if k == "WorkingDirectory":
                os.makedirs(r + v.lstrip("-~"), exist_ok=True)
    p = subprocess.run(["systemd-analyze", "verify", "--root=" + r, *names],
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "SYSTEMD_LOG_COLOR": "0", "SYSTEMD_PAGER": ""})
    return p.returncode, (p.stdout + p.stderr).strip()


units = sorted(n for n in os.listdir(JOBS) if n.endswith((".service", ".timer")))
unit_texts = {n: read(os.path.join(JOBS, n)) for n in units}
with tempfile.TemporaryDirectory(prefix="check-jobs-systemd-") as tmp:
    rc, out = verify_units(units, unit_texts, tmp)
    if rc != 0 or out:
        problem(f"systemd-analyze verify (exit {rc}): {out}")
with tempfile.TemporaryDirectory(prefix="check-jobs-systemd-") as tmp:
    bad = dict(unit_texts)
    bad["herald-run.service"] = bad["herald-run.service"].replace("TimeoutStopSec=", "TimeoutStopSex=")
    rc, out = verify_units(["herald-run.service"], bad, tmp)
    if rc == 0 and not out:
        problem("check-jobs: systemd-analyze verify passed a unit with a misspelt key")
figures.append(f"{len(units)} systemd units")

for name, text in unit_texts.items():
    settings = unit_settings(text)
    get = lambda key: [v for _, k, v in settings if k == key]
    if name.endswith(".timer"):
        if not os.path.exists(os.path.join(JOBS, name[:-len(".timer")] + ".service")):
            problem(f"Jobs/{name}: no service of the same name")
        continue
    creds = {v.split(":", 1)[0] for v in get("LoadCredential")}
    for v in get("Environment"):
        for cred in re.findall(r"%d/([^\s\"]+)", v):
            if cred not in creds:
                problem(f"Jobs/{name}: %d/{cred} is not loaded by a LoadCredential=")
    for v in get("LoadCredential"):
        if ":" not in v or not v.split(":", 1)[1].startswith("/"):
            problem(f"Jobs/{name}: LoadCredential={v} names no absolute source file")
    if any("herald run" in v or "herald serve" in v for v in get("ExecStart")):
        grace = seconds(env_example.get("HERALD_STOP_GRACE_SECONDS", str(STOP_GRACE_DEFAULT)))
        stop = get("TimeoutStopSec")
        if not stop or seconds(stop[-1]) <= grace:
            problem(f"Jobs/{name}: TimeoutStopSec must exceed the stop grace ({grace:g} s)")
    if any("herald run" in v for v in get("ExecStart")):
        if "75" not in " ".join(get("SuccessExitStatus")).split():
            problem(f"Jobs/{name}: exit status 75 (the next run continues) is not SuccessExitStatus")
        cred_sources = {v.split(":", 1)[1] for v in get("LoadCredential")}
        cron_sources = {v for k, v in cron_env.items() if v.startswith("/etc/herald/credentials/")}
        if cred_sources != cron_sources:
            problem(f"Jobs/{name} and Jobs/crontab read the secrets from different files: "
                    f"{sorted(cred_sources)} / {sorted(cron_sources)}")


# ---------------------------------------------------------------- Kubernetes
readme = read(os.path.join(JOBS, "README.md"))
documented = {}
for m in re.finditer(r"kubectl create secret generic ([a-z0-9-]+)((?:\s*\\?\n?\s*--from-file=[^\s\\]+)+)", readme):
    documented[m.group(1)] = set(re.findall(r"--from-file=([^=\s\\]+)=", m.group(2)))

manifests = sorted(n for n in os.listdir(JOBS) if n.startswith("kubernetes-") and n.endswith(".yaml"))
docs = []
for name in manifests:
    try:
        for doc in yaml.safe_load_all(read(os.path.join(JOBS, name))):
            if doc is not None:
                docs.append((name, doc))
    except yaml.YAMLError as e:
        problem(f"Jobs/{name}: not YAML: {e}")

validator = os.path.join(os.path.dirname(sys.executable), "kubernetes-validate")
for version in ("1.30.0", "1.37.0"):
    p = subprocess.run([validator, "--strict", "--quiet", "-k", version, *[os.path.join(JOBS, n) for n in manifests]],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        problem(f"kubernetes-validate {version}: " + (p.stdout + p.stderr).strip())
with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
    f.write("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: x}\nspec:\n  schedule: '* * * * *'\n"
            "  concurrencyPolicy: Sometimes\n  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, "
            "containers: [{name: a, image: b, commandd: [c]}]}}}}\n")
    f.flush()
    if subprocess.run([validator, "--strict", "--quiet", f.name], capture_output=True, timeout=60).returncode == 0:
        problem("check-jobs: kubernetes-validate passed a broken CronJob")

config_maps = {d["metadata"]["name"] for _, d in docs if d.get("kind") == "ConfigMap"}
images = set()


def pod_spec(doc):
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind == "CronJob":
        return ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
    if kind in ("Job", "Deployment"):
        return spec.get("template")
    return None


def check_pod(where, doc, template):
    spec = (template or {}).get("spec") or {}
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    containers = spec.get("containers") or []
    inits = spec.get("initContainers") or []
    if not containers:
        problem(f"{where}: no containers")
    used = set()
    for c in inits + containers:
        cw = f"{where} container {c.get('name')}"
        if not c.get("image"):
            problem(f"{cw}: no image")
        images.add(str(c.get("image")))
        if not (c.get("command") or c.get("args")):
            problem(f"{cw}: no command")
        mounts = {}
        for m in c.get("volumeMounts") or []:
            used.add(m.get("name"))
            if m.get("name") not in volumes:
                problem(f"{cw}: mounts {m.get('name')!r}, which is not a volume")
            mounts[m.get("mountPath", "").rstrip("/")] = m.get("name")
        for ref in c.get("envFrom") or []:
            cm = (ref.get("configMapRef") or {}).get("name")
            if cm and cm not in config_maps:
                problem(f"{cw}: ConfigMap {cm!r} is in no Jobs/kubernetes-*.yaml")
        env = {e["name"]: e.get("value") for e in c.get("env") or []}
        for k, v in env.items():
            if not (k.endswith("_FILE") or k.endswith("_PATH")) or not v:
                continue
            mount = os.path.dirname(v)
            volume = volumes.get(mounts.get(mount))
            if volume is None:
                problem(f"{cw}: {k}={v} is in no mounted volume")
            elif "secret" in volume:
                secret = volume["secret"].get("secretName")
                if os.path.basename(v) not in documented.get(secret, set()):
                    problem(f"{cw}: {k}={v}: Jobs/README.md creates no key {os.path.basename(v)!r} in Secret {secret!r}")
            elif not any(mounts_of(i).get(mount.rstrip("/")) == mounts.get(mount) and os.path.basename(v) in " ".join(i.get("command") or [])
                         for i in inits):
                problem(f"{cw}: {k}={v}: no init container writes it")
        if c in containers and c.get("command", [""])[-1] in ("run", "serve"):
            grace = float(env.get("HERALD_STOP_GRACE_SECONDS") or STOP_GRACE_DEFAULT)
            pre = (((c.get("lifecycle") or {}).get("preStop") or {}).get("sleep") or {}).get("seconds", 0)
            tgp = spec.get("terminationGracePeriodSeconds", 30)
            if tgp <= grace + pre:
                problem(f"{where}: terminationGracePeriodSeconds {tgp} must exceed the stop grace {grace:g} s + preStop {pre} s")
    for name, v in volumes.items():
        if name not in used:
            problem(f"{where}: volume {name!r} is mounted nowhere")
        secret = (v.get("secret") or {}).get("secretName")
        if secret and secret not in documented:
            problem(f"{where}: Secret {secret!r} is not created in Jobs/README.md")
        for item in (v.get("secret") or {}).get("items") or []:
            if item.get("key") not in documented.get(secret, set()):
                problem(f"{where}: Secret {secret!r} has no documented key {item.get('key')!r}")
    return containers


def mounts_of(c):
    return {m.get("mountPath", "").rstrip("/"): m.get("name") for m in c.get("volumeMounts") or []}


def check_doc(name, doc):
    kind, meta = doc.get("kind"), doc.get("metadata") or {}
    where = f"Jobs/{name} {kind}/{meta.get('name')}"
    if not doc.get("apiVersion") or not kind or not meta.get("name"):
        problem(f"Jobs/{name}: a document without apiVersion, kind or metadata.name")
        return
    template = pod_spec(doc)
    containers = []
    if kind in ("CronJob", "Job", "Deployment"):
        containers = check_pod(where, doc, template)
    if kind == "CronJob":
        spec = doc["spec"]
        if spec.get("concurrencyPolicy") not in ("Allow", "Forbid", "Replace"):
            problem(f"{where}: no concurrencyPolicy")
        if not isinstance(spec["jobTemplate"]["spec"].get("parallelism"), int):
            problem(f"{where}: parallelism (workers per run) is not stated")
    if kind in ("CronJob", "Job"):
        if (template.get("spec") or {}).get("restartPolicy") not in ("Never", "OnFailure"):
            problem(f"{where}: a Job's pods need restartPolicy Never or OnFailure")
    if kind == "Deployment":
        labels = (template.get("metadata") or {}).get("labels") or {}
        selector = doc["spec"].get("selector", {}).get("matchLabels") or {}
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            problem(f"{where}: the selector does not match the pod's labels")
        probe = ((containers[0] if containers else {}).get("readinessProbe") or {}).get("httpGet") or {}
        if probe.get("path") != "/healthz":
            problem(f"{where}: no readiness probe on /healthz")
        ports = {p.get("name") for c in containers for p in c.get("ports") or []}
        for svc_name, svc in docs:
            if svc.get("kind") != "Service":
                continue
            sel = svc["spec"].get("selector") or {}
            if sel and all(labels.get(k) == v for k, v in sel.items()):
                for p in svc["spec"].get("ports") or []:
                    if isinstance(p.get("targetPort"), str) and p["targetPort"] not in ports:
                        problem(f"Jobs/{svc_name} Service/{svc['metadata']['name']}: targetPort {p['targetPort']!r} is no container port")
                break
        else:
            problem(f"{where}: no Service selects its pods")

for name, doc in docs:
    try:
        check_doc(name, doc)
    except (AttributeError, KeyError, IndexError, TypeError, ValueError) as e:
        problem(f"Jobs/{name}: {doc.get('kind') if isinstance(doc, dict) else 'a document'} of an unexpected shape ({type(e).__name__}: {e})")

if len(images) > 1:
    problem(f"Jobs/kubernetes-*.yaml: the workloads run different images {sorted(images)}; deploy one version")
figures.append(f"{len(docs)} Kubernetes objects")


# ---------------------------------------------------------------- what is built
# Jobs/ runs what scripts/package and scripts/image make. Each check below
# returns (rule, text) pairs; it runs on the real files, then once on a broken
# copy that breaks every rule of it, and every rule must catch its break there.
def release_number(text):
    m = re.search(r'^\s*static let number = "([^"]+)"', text, re.M)
    return m.group(1) if m else None


def containerfile_instructions(text):
    """(INSTRUCTION, arguments) of the Containerfile's last stage, with
    continuation lines joined and comments dropped."""
    joined, current = [], ""
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.endswith("\\"):
            current += s[:-1] + " "
            continue
        joined.append(current + s)
        current = ""
    out = []
    for line in joined:
        instruction, _, args = line.partition(" ")
        if instruction.upper() == "FROM":
            out = []
        out.append((instruction.upper(), args.strip()))
    return out


def containerfile_last(text, instruction):
    values = [a for i, a in containerfile_instructions(text) if i == instruction]
    return values[-1] if values else None


def herald_pods(docs):
    """(file, where, pod spec) of every workload in the manifests."""
    for name, doc in docs:
        if isinstance(doc, dict) and doc.get("kind") in ("CronJob", "Job", "Deployment"):
            template = pod_spec(doc) or {}
            where = f"Jobs/{name} {doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
            yield name, where, (template.get("spec") or {}) if isinstance(template, dict) else {}


def all_containers(spec):
    return [(c, True) for c in spec.get("initContainers") or []] + [(c, False) for c in spec.get("containers") or []]


def check_images(docs, texts, number):
    """Every container runs registry.example.com/herald:<number>, and every
    herald:<version> that a file in Jobs/ names (the podman lines) is <number>."""
    out = []
    want = REGISTRY_IMAGE + str(number)
    for _, where, spec in herald_pods(docs):
        for c, _ in all_containers(spec):
            if c.get("image") != want:
                out.append(("image", f"{where} container {c.get('name')}: image {c.get('image')!r}, not {want!r} "
                                     "(the number of Sources/herald/Version.swift)"))
    for name, text in texts.items():
        for m in re.finditer(r"(?:localhost|registry\.example\.com)/herald:(\d[\w.+-]*)", text):
            line = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
            if m.group(1).rstrip(".") != number and not line.strip().startswith("image:"):   # those: above
                n = text.count("\n", 0, m.start()) + 1
                out.append(("named", f"Jobs/{name}:{n} names {m.group(0).rstrip('.')}, not release {number}"))
    return out


def herald_starts(tokens):
    """The tokens that start herald: named .../herald and followed by a
    subcommand or an option (so /etc/herald or `cd /opt/herald` are not)."""
    return [t for i, t in enumerate(tokens)
            if os.path.basename(t) == "herald" and i + 1 < len(tokens)
            and re.match(r"^(--?)?[a-z][a-z0-9-]*$", tokens[i + 1])]


def shell_words(text):
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return text.split()


def check_commands(docs, unit_texts, cron_command, containerfile):
    """Kubernetes command[0] of every container, ExecStart= of every service,
    the crontab line, and the Containerfile's ENTRYPOINT start /usr/local/bin/herald;
    nothing in them starts herald from anywhere else."""
    out = []
    for _, where, spec in herald_pods(docs):
        for c, init in all_containers(spec):
            cw = f"{where} container {c.get('name')}"
            command = [str(x) for x in c.get("command") or []]
            words = command + [str(x) for x in c.get("args") or []]
            if not init and command:
                if command[0] != HERALD_BIN:
                    out.append(("kubernetes", f"{cw}: command[0] is {command[0]!r}, not {HERALD_BIN}"))
                words = words[1:]           # checked just now
            for w in [words] + [shell_words(x) for x in words if " " in x]:
                for t in herald_starts(w):
                    if t != HERALD_BIN:
                        out.append(("kubernetes", f"{cw}: starts {t!r}, not {HERALD_BIN}"))
    for name, text in unit_texts.items():
        settings = unit_settings(text)
        starts = [v.lstrip("-@:+!") for _, k, v in settings if k == "ExecStart"]
        if name.endswith(".service") and not any(v.split()[:1] == [HERALD_BIN] for v in starts):
            out.append(("systemd", f"Jobs/{name}: ExecStart={starts[0] if starts else ''} does not start {HERALD_BIN}"))
        for _, k, v in settings:
            if k.startswith("Exec"):
                words = shell_words(v.lstrip("-@:+!"))
                for t in herald_starts(words[1:] if k == "ExecStart" and name.endswith(".service") else words):
                    if t != HERALD_BIN:
                        out.append(("systemd", f"Jobs/{name}: {k}= starts {t!r}, not {HERALD_BIN}"))
    starts = herald_starts(shell_words(cron_command or ""))
    if not starts or any(t != HERALD_BIN for t in starts):
        out.append(("crontab", f"Jobs/crontab: the line starts {', '.join(starts) or 'no herald'}, not {HERALD_BIN}"))
    entrypoint = containerfile_last(containerfile, "ENTRYPOINT")
    try:
        first = (json.loads(entrypoint) or [None])[0] if entrypoint and entrypoint.startswith("[") else None
    except ValueError:
        first = None
    if first != HERALD_BIN:
        out.append(("containerfile", f"Containerfile: ENTRYPOINT {entrypoint} is not [\"{HERALD_BIN}\", …]"))
    return out


def check_users(docs, containerfile):
    """Every pod runs as the Containerfile's USER (runAsUser, and runAsGroup
    when USER names a group) with runAsNonRoot: true; every container has
    readOnlyRootFilesystem: true, allowPrivilegeEscalation: false and drops ALL
    capabilities, and overrides none of the pod's user settings."""
    out = []
    user = containerfile_last(containerfile, "USER") or ""
    uid, _, gid = user.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        out.append(("containerfile", f"Containerfile: USER {user!r} is not a numeric uid[:gid]"))
    for _, where, spec in herald_pods(docs):
        sc = spec.get("securityContext") or {}
        if sc.get("runAsNonRoot") is not True:
            out.append(("runAsNonRoot", f"{where}: the pod has no runAsNonRoot: true"))
        if str(sc.get("runAsUser")) != uid:
            out.append(("runAsUser", f"{where}: runAsUser {sc.get('runAsUser')}, not the Containerfile's USER uid {uid}"))
        if gid and str(sc.get("runAsGroup")) != gid:
            out.append(("runAsGroup", f"{where}: runAsGroup {sc.get('runAsGroup')}, not the Containerfile's USER gid {gid}"))
        for c, _ in all_containers(spec):
            cw = f"{where} container {c.get('name')}"
            csc = c.get("securityContext") or {}
            if csc.get("readOnlyRootFilesystem") is not True:
                out.append(("readOnlyRootFilesystem", f"{cw}: no readOnlyRootFilesystem: true"))
            if csc.get("allowPrivilegeEscalation") is not False:
                out.append(("allowPrivilegeEscalation", f"{cw}: no allowPrivilegeEscalation: false"))
            if "ALL" not in ((csc.get("capabilities") or {}).get("drop") or []):
                out.append(("capabilities", f"{cw}: does not drop ALL capabilities"))
            for k in ("runAsUser", "runAsGroup", "runAsNonRoot"):
                if k in csc and csc[k] != sc.get(k):
                    out.append((k, f"{cw}: securityContext.{k} {csc[k]} overrides the pod's {sc.get(k)}"))
    return out


# The forms a file can set HERALD_SQL_DIR in (env file, crontab, unit
# Environment=, ConfigMap data, a container's env) and its TOML key.
SQL_DIR_FORMS = {
    "KEY=": re.compile(r"\bHERALD_SQL_DIR\s*="),
    "KEY:": re.compile(r"\bHERALD_SQL_DIR['\"]?\s*:"),
    "name: KEY": re.compile(r"\bname:\s*['\"]?HERALD_SQL_DIR\b"),
    "sql_dir =": re.compile(r"^\s*(?:database\.)?['\"]?sql_dir['\"]?\s*=", re.M),
}


def check_sql_dir(texts):
    """No file in Jobs/ sets HERALD_SQL_DIR (or herald.toml's sql_dir): the
    migrations are in the binary."""
    out = []
    for name, text in texts.items():
        for n, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            for form, pattern in SQL_DIR_FORMS.items():
                if pattern.search(line):
                    out.append((form, f"Jobs/{name}:{n}: sets HERALD_SQL_DIR ({line.strip()!r}); the binary embeds the migrations"))
    return out


def must_fail(label, found, rules):
    """The broken copy must be caught by every rule it breaks."""
    missed = sorted(set(rules) - {rule for rule, _ in found})
    if missed:
        problem(f"check-jobs: the {label} check passed a broken copy (not caught: {', '.join(missed)})")


jobs_texts = {n: read(os.path.join(JOBS, n)) for n in sorted(os.listdir(JOBS))
              if os.path.isfile(os.path.join(JOBS, n))}
containerfile_text = read(os.path.join(ROOT, "Containerfile")) if os.path.exists(os.path.join(ROOT, "Containerfile")) else ""
if not containerfile_text:
    problem("Containerfile: missing or empty")
number = release_number(read(os.path.join(ROOT, "Sources/herald/Version.swift")))
if not number:
    problem('Sources/herald/Version.swift: no `static let number = "…"` line')
cron_command = cron_commands[0][1] if len(cron_commands) == 1 else None
n_pods = sum(1 for _ in herald_pods(docs))

# Images: the release's, pushed to the registry.
for _, text in check_images(docs, jobs_texts, number):
    problem(text)
bad_docs = copy.deepcopy(docs)
for i, (_, _, spec) in enumerate(herald_pods(bad_docs)):
    c = (spec.get("containers") or [{}])[0]
    c["image"] = [f"localhost/herald:{number}", "registry.example.com/herald:latest", f"{REGISTRY_IMAGE}{number}.1"][i % 3]
bad_texts = {n: t.replace(f"registry.example.com/herald:{number}", "registry.example.com/herald:0.9.0") for n, t in jobs_texts.items()}
must_fail("image", check_images(bad_docs, bad_texts, number), ["image", "named"])

# Commands: /usr/local/bin/herald everywhere, as the Containerfile's ENTRYPOINT.
found = check_commands(docs, unit_texts, cron_command, containerfile_text)
for _, text in found:
    problem(text)
bad_docs = copy.deepcopy(docs)
for _, _, spec in herald_pods(bad_docs):
    for c in spec.get("containers") or []:
        if c.get("command"):
            c["command"][0] = "/opt/herald/herald"
bad_units = {n: t.replace("ExecStart=" + HERALD_BIN, "ExecStart=/opt/herald/herald") for n, t in unit_texts.items()}
bad_cron = (cron_command or "").replace(HERALD_BIN, "cd /opt/herald && exec ./herald")
bad_containerfile = re.sub(r"(?m)^ENTRYPOINT .*$", 'ENTRYPOINT ["/opt/herald/herald"]', containerfile_text)
must_fail("command", check_commands(bad_docs, bad_units, bad_cron, bad_containerfile),
          ["kubernetes", "systemd", "crontab", "containerfile"])
n_commands = sum(1 for _, _, spec in herald_pods(docs) for c in spec.get("containers") or []) \
    + sum(1 for n in unit_texts if n.endswith(".service")) + 1

# Users: the Containerfile's, non-root, on a read-only root.
for _, text in check_users(docs, containerfile_text):
    problem(text)
bad_docs = copy.deepcopy(docs)
breaks = [lambda s: s.setdefault("securityContext", {}).pop("runAsNonRoot", None),
          lambda s: (s.get("containers") or [{}])[0].setdefault("securityContext", {}).update(readOnlyRootFilesystem=False),
          lambda s: (s.get("containers") or [{}])[0].setdefault("securityContext", {}).update(
              allowPrivilegeEscalation=True, capabilities={"drop": ["NET_RAW"]})]
bad_specs = [spec for _, _, spec in herald_pods(bad_docs)]
for i, breaking in enumerate(breaks if bad_specs else []):
    breaking(bad_specs[i % len(bad_specs)])
bad_containerfile = re.sub(r"(?m)^USER .*$", "USER 10002:10002", containerfile_text)
must_fail("user", check_users(bad_docs, bad_containerfile),
          ["runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem", "allowPrivilegeEscalation", "capabilities"])

# HERALD_SQL_DIR: set nowhere.
for _, text in check_sql_dir(jobs_texts):
    problem(text)
bad_texts = dict(jobs_texts)
bad_texts["env.example"] += "HERALD_SQL_DIR=/opt/herald/Sql\n"
bad_texts["kubernetes-config.yaml"] += "  HERALD_SQL_DIR: /opt/herald/Sql\n"
bad_texts["kubernetes-cronjob.yaml"] = bad_texts["kubernetes-cronjob.yaml"].replace(
    "              env:\n", "              env:\n                - name: HERALD_SQL_DIR\n                  value: /opt/herald/Sql\n", 1)
bad_texts["herald.toml"] = bad_texts["herald.toml"].replace("[database]\n", '[database]\nsql_dir = "/opt/herald/Sql"\n', 1)
must_fail("HERALD_SQL_DIR", check_sql_dir(bad_texts), list(SQL_DIR_FORMS))

user = (containerfile_last(containerfile_text, "USER") or "?").partition(":")[0]
figures.append(f"{REGISTRY_IMAGE}{number} in {n_pods} pods, {HERALD_BIN} in {n_commands} commands "
               f"and the ENTRYPOINT, pods as uid {user} read-only, no HERALD_SQL_DIR")

if problems:
    for p in problems:
        print("check-jobs: " + p, file=sys.stderr)
    print(f"check-jobs: FAILED ({len(problems)} problem{'s' if len(problems) > 1 else ''})")
    sys.exit(1)
print("check-jobs: ok (" + ", ".join(figures) + ")")
