//! Unit tests of `snapshot.rs`.

use super::*;
use serde_json::json;

fn entry(manifest: serde_json::Value) -> Entry {
    Entry {
        manifest: serde_json::from_value(manifest).unwrap(),
        code: None,
        file: None,
    }
}

#[test]
fn federated_tools_join_the_catalogue_are_searchable_and_an_upstream_name_is_the_upstream_s() {
    let (base, _) = Snapshot::build(vec![entry(json!({"slug": "alpha"}))], Origin::Local);
    let upstream = |slug: &str, description: &str| {
        let m: Manifest = serde_json::from_value(json!({"slug": slug, "description": description})).unwrap();
        (
            m,
            Federated {
                server: "srv".into(),
                tool: "t".into(),
            },
        )
    };
    let extra = vec![
        upstream("srv__weather", "Tells the weather forecast."),
        upstream("alpha", "a clash"),
        upstream("alpha", "a second one"),
    ];
    let (merged, problems) = base.with_federated(extra, &Budget::unlimited()).unwrap();
    let slugs: Vec<_> = merged.tools().iter().map(|t| t.slug()).collect();
    assert_eq!(slugs, ["alpha", "srv__weather"]);
    assert!(
        merged.get("alpha").unwrap().federated.is_some(),
        "the upstream's, never the catalogue's"
    );
    assert!(
        matches!(&problems[0], Problem::Refused { name, .. } if name == "alpha"),
        "{problems:?}"
    );
    assert_eq!(problems[1], Problem::Duplicate { slug: "alpha".into() });
    assert_eq!(problems.len(), 2, "{problems:?}");
    let hits = merged.search("weather forecast", 5).unwrap();
    assert_eq!(hits[0].0.slug(), "srv__weather");
    let (again, _) = merged.with_federated(vec![], &Budget::unlimited()).unwrap();
    assert_eq!(
        again.tools().len(),
        0,
        "a merge replaces the upstream tools, never stacks them"
    );
}

#[test]
fn sorts_withholds_bad_slugs_and_sets_aside_bad_schemas() {
    let (snap, problems) = Snapshot::build(
        vec![
            entry(json!({"slug": "zeta"})),
            entry(json!({"slug": "has space"})),
            entry(json!({"slug": "alpha"})),
            entry(json!({"slug": "broken", "input_schema": 5})),
            entry(json!({"slug": "alpha"})),
        ],
        Origin::Local,
    );
    let slugs: Vec<_> = snap.tools().iter().map(|t| t.slug()).collect();
    assert_eq!(slugs, vec!["alpha", "has space", "zeta"]);
    assert!(!snap.get("has space").unwrap().is_advertisable);
    assert!(snap.resolve("has space").is_ok());
    assert!(snap.resolve_advertisable("has space").is_err());
    assert_eq!(problems.len(), 3, "{problems:?}");
    let unserved: Vec<_> = problems
        .iter()
        .filter(|p| p.is_unserved())
        .map(Problem::subject)
        .collect();
    assert_eq!(unserved, vec!["broken", "alpha"], "{problems:?}");
    assert!(
        problems[0].to_string().contains("withheld from tools/list"),
        "{problems:?}"
    );
}
