//! The principal a call acts as: an `--http` session belongs to the principal of its
//! first call, so two principals' histories never mix, even when one presents the
//! other's session id.

use serde_json::json;

use crate::access::new_key;
use crate::http::{HttpGate, Session};
use crate::util::fixtures;

#[tokio::test]
async fn a_session_belongs_to_its_principal_and_another_cannot_use_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let alice_key = new_key(&file, "run,search", "alice").await;
    let bob_key = new_key(&file, "run,search", "bob").await;
    let catalogue = fixtures().display().to_string();
    let gate = HttpGate::start(&[
        ("TOOLGATE_CATALOGUE", &catalogue),
        ("TOOLGATE_KEYS_FILE", file.to_str().unwrap()),
    ])
    .await;
    let mut alice = Session::open_keyed(&gate.url, &alice_key).await;
    let ran = alice.call("echo", json!({"message": "alice's secret"})).await;
    assert_eq!(ran["success"], true, "{ran}");
    // Bob, with a key of his own, presents Alice's session id.
    let mut bob_in_alices = Session::open_keyed(&gate.url, &bob_key).await;
    bob_in_alices.id = alice.id.clone();
    let peek = bob_in_alices.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(peek["code"], "BAD_REQUEST", "{peek}");
    assert!(!peek.to_string().contains("alice's secret"), "{peek}");
    let ran = bob_in_alices.call("echo", json!({"message": "bob's"})).await;
    assert_eq!(ran["code"], "BAD_REQUEST", "{ran}");
    let read = bob_in_alices
        .request("resources/read", json!({"uri": "toolgate://history"}))
        .await;
    assert!(read["error"].is_object(), "{read}");
    assert!(!read.to_string().contains("alice's secret"), "{read}");
    // His own session works, and holds only his runs; Alice's holds only hers.
    let mut bob = Session::open_keyed(&gate.url, &bob_key).await;
    assert_eq!(bob.call("echo", json!({"message": "bob's"})).await["success"], true);
    let bobs = bob.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(bobs["runs"].as_array().map(Vec::len), Some(1), "{bobs}");
    assert!(!bobs.to_string().contains("alice"), "{bobs}");
    let hers = alice.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(hers["runs"].as_array().map(Vec::len), Some(1), "{hers}");
}
