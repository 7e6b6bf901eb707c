//! Pod and workload spec validation through the real kubectl: an invalid
//! Pod or Deployment is refused with upstream's 422 and kubectl prints
//! `The <Kind> "<name>" is invalid:` with upstream's field paths and
//! messages; pod updates may only change images and a few other fields.

mod api_common;
mod support;

use api_common::{apply, apply_fails, fails, ok};
use support::TestServer;

#[test]
fn invalid_pods_are_refused_with_upstreams_messages() {
    let s = TestServer::start();
    let err = apply_fails(&s, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers: []\n");
    assert!(err.contains("The Pod \"x\" is invalid: spec.containers: Required value"), "{err}");

    let err = apply_fails(
        &s,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  restartPolicy: Sometimes\n  containers:\n  - name: c\n    image: nginx\n    ports:\n    - containerPort: 70000\n  - name: c\n    image: nginx\n",
    );
    assert!(err.contains("The Pod \"x\" is invalid: \n"), "{err}");
    for line in [
        "* spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        "* spec.containers[1].name: Duplicate value: \"c\"",
        "* spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
    ] {
        assert!(err.contains(line), "missing {line:?} in:\n{err}");
    }
    let err = fails(&s, &["get", "pod", "x"]);
    assert!(err.contains("NotFound") || err.contains("not found"), "{err}");
}

#[test]
fn pod_updates_may_only_change_images_and_a_few_fields() {
    let s = TestServer::start();
    let pod =
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: nginx:1.27\n";
    apply(&s, pod);
    apply(&s, &pod.replace("nginx:1.27", "nginx:1.28"));
    assert_eq!(ok(&s, &["get", "pod", "p", "-o", "jsonpath={.spec.containers[0].image}"]), "nginx:1.28");
    let err = apply_fails(&s, &format!("{pod}    env:\n    - name: A\n      value: b\n").replace("1.27", "1.28"));
    assert!(
        err.contains("The Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"),
        "{err}"
    );
}

#[test]
fn deployments_need_a_selector_matching_the_template() {
    let s = TestServer::start();
    let d = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector:\n    matchLabels:\n      app: x\n  template:\n    metadata:\n      labels:\n        app: \"y\"\n    spec:\n      containers:\n      - name: c\n        image: nginx\n";
    let err = apply_fails(&s, d);
    assert!(
        err.contains("The Deployment \"d\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`"),
        "{err}"
    );
    let good = d.replace("app: \"y\"", "app: x");
    apply(&s, &good);
    let err = apply_fails(&s, &good.replace("app: x", "app: z"));
    assert!(err.contains("The Deployment \"d\" is invalid: spec.selector: Invalid value:"), "{err}");
    assert!(err.contains("field is immutable"), "{err}");
}
