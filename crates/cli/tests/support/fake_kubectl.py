#!/usr/bin/env python3
"""A stand-in for kubectl in pgsurge's tests: there is no cluster here, so the pods of
an applied Indexed Job are processes on this machine, started the way the kubelet
would start the container.

Environment:
  FAKE_KUBECTL_STATE       directory for what it records (required)
  FAKE_KUBECTL_ENTRYPOINT  the program that stands for the image's entrypoint
  FAKE_KUBECTL_SECRETS     a JSON file {"secret-name": {"key": "value"}} (optional)

Commands (global flags --context, --namespace/-n anywhere):
  apply -f -             reads a Job (JSON or YAML) on stdin, records it, and starts
                         one process per completion index, in the background
  delete job NAME        kills the Job's pods that still run, forgets the Job
  get pods -l SELECTOR   NAME and STATUS of the Job's pods
  logs -l SELECTOR       their output (--prefix, --tail=N)

Each call is appended to STATE/calls.jsonl as {"globals": {...}, "args": [...]}.
For every pod, as the kubelet does: the container's env in order (plain values with
$(VAR) expanded from the variables before them; fieldRef metadata.name and the
completion-index annotation; secretKeyRef from FAKE_KUBECTL_SECRETS — a missing
Secret key leaves the pod unstarted with CreateContainerConfigError), then
$(VAR) in the args expanded from that env ($$ is a literal $). The process gets that
env and nothing else, its stdout and stderr in one log as `kubectl logs` shows them.
"""

import json
import os
import random
import signal
import string
import subprocess
import sys

STATE = os.environ["FAKE_KUBECTL_STATE"]
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


def path(*parts):
    return os.path.join(STATE, *parts)


def fail(message):
    sys.stderr.write("error: " + message + "\n")
    sys.exit(1)


def split_globals(argv):
    globals_, rest, i = {}, [], 0
    names = {"--context": "context", "--namespace": "namespace", "-n": "namespace"}
    while i < len(argv):
        a = argv[i]
        flag, _, value = a.partition("=")
        if flag in names and value:
            globals_[names[flag]] = value
            i += 1
        elif a in names and i + 1 < len(argv):
            globals_[names[a]] = argv[i + 1]
            i += 2
        else:
            rest.append(a)
            i += 1
    return globals_, rest


def expand(text, env):
    """The kubelet's $(VAR) expansion: $$ is $, an unknown $(VAR) stays as written."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i) and ")" in text[i + 2:]:
            end = text.index(")", i + 2)
            name = text[i + 2:end]
            out.append(env.get(name, text[i:end + 1]))
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def load_job(name):
    try:
        with open(path("jobs", name + ".json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def selected_job(args):
    """The Job named by `-l app.kubernetes.io/instance=NAME`."""
    for i, a in enumerate(args):
        sel = None
        if a == "-l" and i + 1 < len(args):
            sel = args[i + 1]
        elif a.startswith("--selector=") or a.startswith("-l="):
            sel = a.split("=", 1)[1]
        if sel and sel.startswith("app.kubernetes.io/instance="):
            return load_job(sel.split("=", 1)[1])
    fail("fake kubectl: expected -l app.kubernetes.io/instance=NAME")


def pod_status(pod):
    status = path("pods", pod + ".status")
    if os.path.exists(status):
        with open(status) as f:
            return f.read().strip()
    exit_file = path("pods", pod + ".exit")
    if os.path.exists(exit_file):
        with open(exit_file) as f:
            return "Completed" if f.read().strip() == "0" else "Error"
    return "Running"


def apply(args):
    if args[:2] != ["-f", "-"]:
        fail("fake kubectl: only `apply -f -` is supported")
    text = sys.stdin.read()
    os.makedirs(path("manifests"), exist_ok=True)
    count = len(os.listdir(path("manifests")))
    with open(path("manifests", "%03d.txt" % count), "w") as f:
        f.write(text)
    try:
        job = json.loads(text)
    except ValueError:
        import yaml

        job = yaml.safe_load(text)
    if job.get("apiVersion") != "batch/v1" or job.get("kind") != "Job":
        fail("fake kubectl: not a batch/v1 Job")
    spec = job["spec"]
    if spec.get("completionMode") != "Indexed":
        fail("fake kubectl: not an Indexed Job")
    name = job["metadata"]["name"]
    os.makedirs(path("jobs"), exist_ok=True)
    os.makedirs(path("pods"), exist_ok=True)
    if load_job(name) is not None:
        fail('jobs.batch "%s" already exists (the fake cannot change a Job)' % name)
    secrets = {}
    if os.environ.get("FAKE_KUBECTL_SECRETS"):
        with open(os.environ["FAKE_KUBECTL_SECRETS"]) as f:
            secrets = json.load(f)
    container = spec["template"]["spec"]["containers"][0]
    pods = []
    for index in range(spec["completions"]):
        suffix = "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
        pod = "%s-%d-%s" % (name, index, suffix)
        pods.append(pod)
        annotations = {INDEX_ANNOTATION: str(index)}
        env, problem = {}, None
        for e in container.get("env", []):
            source = e.get("valueFrom") or {}
            if "value" in e:
                env[e["name"]] = expand(e["value"], env)
            elif "fieldRef" in source:
                field = source["fieldRef"]["fieldPath"]
                if field == "metadata.name":
                    env[e["name"]] = pod
                elif field == "metadata.annotations['%s']" % INDEX_ANNOTATION:
                    env[e["name"]] = annotations[INDEX_ANNOTATION]
                else:
                    problem = "CreateContainerConfigError: unsupported fieldPath " + field
            elif "secretKeyRef" in source:
                ref = source["secretKeyRef"]
                value = secrets.get(ref["name"], {}).get(ref["key"])
                if value is not None:
                    env[e["name"]] = value
                elif not ref.get("optional", False):
                    problem = "CreateContainerConfigError: couldn't find key %s in Secret %s" % (
                        ref["key"],
                        ref["name"],
                    )
            else:
                problem = "CreateContainerConfigError: env %s has no value" % e["name"]
        # The Job controller's own variable, when the template does not set it.
        env.setdefault("JOB_COMPLETION_INDEX", str(index))
        if problem:
            with open(path("pods", pod + ".status"), "w") as f:
                f.write(problem)
            continue
        command = container.get("command") or [os.environ["FAKE_KUBECTL_ENTRYPOINT"]]
        argv = [expand(a, env) for a in command + container.get("args", [])]
        with open(path("pods", pod + ".argv.json"), "w") as f:
            json.dump({"argv": argv, "env": env}, f)
        log = open(path("pods", pod + ".log"), "wb")
        proc = subprocess.Popen(
            ["/bin/sh", "-c", '"$@"; echo $? > "$0"', path("pods", pod + ".exit")] + argv,
            env=env,
            cwd=path("pods"),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        with open(path("pods", pod + ".pid"), "w") as f:
            f.write(str(proc.pid))
    job["fake_pods"] = pods
    with open(path("jobs", name + ".json"), "w") as f:
        json.dump(job, f)
    print("job.batch/%s created" % name)


def delete(args):
    if len(args) < 2 or args[0] != "job":
        fail("fake kubectl: only `delete job NAME` is supported")
    name = args[1]
    job = load_job(name)
    if job is None:
        if "--ignore-not-found" in args:
            return
        fail('jobs.batch "%s" not found' % name)
    for pod in job["fake_pods"]:
        try:
            with open(path("pods", pod + ".pid")) as f:
                os.killpg(int(f.read()), signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass
    os.makedirs(path("deleted"), exist_ok=True)
    os.rename(path("jobs", name + ".json"), path("deleted", name + ".json"))
    print('job.batch "%s" deleted' % name)


def get(args):
    if args[:1] != ["pods"]:
        fail("fake kubectl: only `get pods -l …` is supported")
    job = selected_job(args)
    print("NAME%sSTATUS" % (" " * 36))
    for pod in (job or {}).get("fake_pods", []):
        print("%-40s%s" % (pod, pod_status(pod)))


def logs(args):
    job = selected_job(args) or {"fake_pods": []}
    tail = None
    for a in args:
        if a.startswith("--tail="):
            tail = int(a.split("=", 1)[1])
    for pod in job["fake_pods"]:
        try:
            with open(path("pods", pod + ".log"), errors="replace") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            continue
        if tail is not None:
            lines = lines[-tail:] if tail > 0 else []
        prefix = "[pod/%s/generator] " % pod if "--prefix" in args else ""
        for line in lines:
            print(prefix + line)


def main():
    os.makedirs(STATE, exist_ok=True)
    globals_, args = split_globals(sys.argv[1:])
    with open(path("calls.jsonl"), "a") as f:
        f.write(json.dumps({"globals": globals_, "args": args}) + "\n")
    commands = {"apply": apply, "delete": delete, "get": get, "logs": logs}
    if not args or args[0] not in commands:
        fail("fake kubectl: unsupported command: %s" % " ".join(args))
    commands[args[0]](args[1:])


if __name__ == "__main__":
    main()
