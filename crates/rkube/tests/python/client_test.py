"""The official Python `kubernetes` client drives a running rkube server.

Run by crates/rkube/tests/client_python.rs with the interpreter of the venv
that scripts/test.sh sets up; the admin kubeconfig comes from
RKUBE_TEST_KUBECONFIG. Exits non-zero (with a traceback) on the first failure.
"""

import os
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "default"


def expect_api_error(status, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        assert e.status == status, f"expected {status}, got {e.status}: {e.body}"
        return e
    raise AssertionError(f"expected HTTP {status} from {fn.__name__}, got success")


def configmap(name, labels, data):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data=data)


def configmaps(core):
    # create + read
    created = core.create_namespaced_config_map(NS, configmap("py", {"app": "web", "client": "python"}, {"mode": "fast"}))
    assert created.metadata.namespace == NS, created.metadata
    assert len(created.metadata.uid) == 36, created.metadata
    assert created.metadata.resource_version, created.metadata
    assert created.metadata.creation_timestamp is not None, created.metadata
    got = core.read_namespaced_config_map("py", NS)
    assert got.data == {"mode": "fast"}, got.data
    assert got.metadata.uid == created.metadata.uid
    expect_api_error(404, core.read_namespaced_config_map, "no-such-configmap", NS)

    core.create_namespaced_config_map(NS, configmap("other", {"app": "db"}, {}))
    expect_api_error(409, core.create_namespaced_config_map, NS, configmap("other", None, None))

    # list with a label selector
    listed = core.list_namespaced_config_map(NS, label_selector="app=web,client")
    assert [c.metadata.name for c in listed.items] == ["py"], listed.items
    assert listed.metadata.resource_version, listed.metadata
    everything = core.list_config_map_for_all_namespaces(label_selector="app in (web, db)")
    assert sorted(c.metadata.name for c in everything.items) == ["other", "py"], everything.items

    # patch: a dict body goes out as a strategic merge patch by default
    patched = core.patch_namespaced_config_map("py", NS, {"metadata": {"labels": {"tier": "backend"}}, "data": {"mode": "slow"}})
    assert patched.data == {"mode": "slow"}, patched.data
    assert patched.metadata.labels == {"app": "web", "client": "python", "tier": "backend"}, patched.metadata.labels

    # a list body goes out as a JSON patch
    patched = core.patch_namespaced_config_map("py", NS, [{"op": "add", "path": "/data/extra", "value": "1"}])
    assert patched.data == {"mode": "slow", "extra": "1"}, patched.data
    patched = core.patch_namespaced_config_map("py", NS, [{"op": "remove", "path": "/data/extra"}])

    # replace with the current resourceVersion; a stale one conflicts
    patched.data["mode"] = "replaced"
    replaced = core.replace_namespaced_config_map("py", NS, patched)
    assert replaced.data == {"mode": "replaced"}, replaced.data
    patched.data["mode"] = "stale"
    expect_api_error(409, core.replace_namespaced_config_map, "py", NS, patched)

    # delete
    status = core.delete_namespaced_config_map("other", NS)
    assert status is not None
    expect_api_error(404, core.read_namespaced_config_map, "other", NS)
    core.delete_namespaced_config_map("py", NS)
    left = [c.metadata.name for c in core.list_namespaced_config_map(NS).items if c.metadata.name != "kube-root-ca.crt"]
    assert left == [], left
    print("configmaps: ok")


def configmap_watch(core):
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    events = []
    errors = []
    started = threading.Event()

    def run():
        w = watch.Watch()
        try:
            stream = w.stream(
                core.list_namespaced_config_map,
                NS,
                label_selector="watched=yes",
                resource_version=rv,
                timeout_seconds=20,
            )
            started.set()
            for event in stream:
                obj = event["object"]
                events.append(f'{event["type"]} {obj.metadata.name} {(obj.data or {}).get("mode", "")}')
                if event["type"] == "DELETED":
                    w.stop()
        except Exception as e:  # reported by the main thread
            errors.append(repr(e))
            started.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(10)
    # The generator sends its request on the first next(); a watch from the
    # list's resourceVersion sees every change after it anyway.
    core.create_namespaced_config_map(NS, configmap("unwatched", None, None))
    core.create_namespaced_config_map(NS, configmap("watched", {"watched": "yes"}, {"mode": "a"}))
    core.patch_namespaced_config_map("watched", NS, {"data": {"mode": "b"}})
    core.delete_namespaced_config_map("watched", NS)
    thread.join(25)
    assert not thread.is_alive(), f"watch did not end; events so far: {events}"
    assert not errors, errors
    assert events == ["ADDED watched a", "MODIFIED watched b", "DELETED watched b"], events
    core.delete_namespaced_config_map("unwatched", NS)
    print("watch: ok")


def deployments(apps):
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="py-deploy", labels={"app": "py"}),
        spec=client.V1DeploymentSpec(
            replicas=2,
            selector=client.V1LabelSelector(match_labels={"app": "py"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "py"}),
                spec=client.V1PodSpec(
                    containers=[
                        client.V1Container(name="main", image="registry.k8s.io/pause:3.10"),
                        client.V1Container(name="sidecar", image="registry.k8s.io/pause:3.10"),
                    ]
                ),
            ),
        ),
    )
    created = apps.create_namespaced_deployment(NS, body)
    assert created.metadata.generation == 1, created.metadata
    assert created.spec.replicas == 2
    # workload defaults as upstream
    assert created.spec.strategy.type == "RollingUpdate", created.spec.strategy
    assert created.spec.revision_history_limit == 10, created.spec
    assert created.spec.template.spec.restart_policy == "Always", created.spec.template.spec

    # strategic merge patch: containers merge on their name (a merge patch
    # would drop the sidecar)
    patched = apps.patch_namespaced_deployment(
        "py-deploy", NS, {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]}}}}
    )
    containers = patched.spec.template.spec.containers
    assert [(c.name, c.image) for c in containers] == [("main", "registry.k8s.io/pause:3.9"), ("sidecar", "registry.k8s.io/pause:3.10")], containers
    assert patched.metadata.generation == 2, patched.metadata

    listed = apps.list_namespaced_deployment(NS, label_selector="app=py")
    assert [d.metadata.name for d in listed.items] == ["py-deploy"], listed.items
    everywhere = apps.list_deployment_for_all_namespaces()
    assert "py-deploy" in [d.metadata.name for d in everywhere.items]

    apps.delete_namespaced_deployment("py-deploy", NS)
    deadline = time.time() + 10
    while apps.list_namespaced_deployment(NS).items and time.time() < deadline:
        time.sleep(0.1)
    expect_api_error(404, apps.read_namespaced_deployment, "py-deploy", NS)
    print("deployments: ok")


def main():
    kubeconfig = os.environ.get("RKUBE_TEST_KUBECONFIG")
    if not kubeconfig:
        sys.exit("RKUBE_TEST_KUBECONFIG is not set")
    config.load_kube_config(config_file=kubeconfig)
    api = client.ApiClient()
    namespaces = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
    assert "default" in namespaces and "kube-system" in namespaces, namespaces
    configmaps(client.CoreV1Api(api))
    configmap_watch(client.CoreV1Api(api))
    deployments(client.AppsV1Api(api))
    print("python client: all ok")


if __name__ == "__main__":
    main()
