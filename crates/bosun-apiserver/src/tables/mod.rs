//! `meta.k8s.io/v1` Tables for `kubectl get`: column definitions and one row of cells per
//! object, with the columns upstream's printers (kubernetes `pkg/printers/internalversion`)
//! give the common built-in kinds, a CRD version's `additionalPrinterColumns` (JSONPath cells
//! typed as upstream's CRD table convertor types them), and Name + Age for everything else.
//! Pure functions of the objects and the current time.

mod cells;
use cells::*;

use bosun_core::jsonpath::JsonPathTemplate;
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::registry::{ResourceInfo, VersionInfo};

/// What each row's `object` carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// The `includeObject` query parameter (anything unknown is the default).
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// One column: name, type, format, priority (0 = shown by default, 1 = `-o wide`), description.
type ColumnSpec = (&'static str, &'static str, &'static str, u8, &'static str);

const NAME: ColumnSpec = ("Name", "string", "name", 0, NAME_DESCRIPTION);
const AGE: ColumnSpec = ("Age", "string", "", 0, AGE_DESCRIPTION);
const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const CONTAINERS: ColumnSpec = ("Containers", "string", "", 1, "Names of each container in the template.");
const IMAGES: ColumnSpec = ("Images", "string", "", 1, "Images referenced by each container in the template.");
const SELECTOR: ColumnSpec =
    ("Selector", "string", "", 1, "A label query over pods that should match the replica count.");

/// A built-in kind's printer: its columns and a function from object to cells.
struct Printer {
    columns: &'static [ColumnSpec],
    cells: fn(&Value, Timestamp) -> Vec<Value>,
}

fn printer(info: &ResourceInfo) -> Option<Printer> {
    let printer = |columns, cells| Some(Printer { columns, cells });
    match (info.group.as_str(), info.kind.as_str()) {
        ("apps", "Deployment") => printer(
            &[
                NAME,
                ("Ready", "string", "", 0, "Number of the pod with ready state"),
                (
                    "Up-to-date",
                    "string",
                    "",
                    0,
                    "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                ),
                (
                    "Available",
                    "string",
                    "",
                    0,
                    "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                ),
                AGE,
                CONTAINERS,
                IMAGES,
                SELECTOR,
            ],
            |o, now| {
                let mut cells = vec![
                    name(o),
                    json!(format!("{}/{}", int(o, "/status/readyReplicas"), replicas(o))),
                    json!(int(o, "/status/updatedReplicas")),
                    json!(int(o, "/status/availableReplicas")),
                    age(o, now),
                ];
                cells.extend(template_cells(o));
                cells
            },
        ),
        ("apps", "ReplicaSet") | ("", "ReplicationController") => printer(
            &[
                NAME,
                ("Desired", "integer", "", 0, "Number of desired pods."),
                ("Current", "integer", "", 0, "Number of actual replicas."),
                ("Ready", "integer", "", 0, "The number of ready replicas for this replica set."),
                AGE,
                CONTAINERS,
                IMAGES,
                SELECTOR,
            ],
            |o, now| {
                let mut cells = vec![
                    name(o),
                    json!(replicas(o)),
                    json!(int(o, "/status/replicas")),
                    json!(int(o, "/status/readyReplicas")),
                    age(o, now),
                ];
                cells.extend(template_cells(o));
                cells
            },
        ),
        ("apps", "StatefulSet") => printer(
            &[NAME, ("Ready", "string", "", 0, "Number of the pod with ready state"), AGE, CONTAINERS, IMAGES],
            |o, now| {
                let mut cells =
                    vec![name(o), json!(format!("{}/{}", int(o, "/status/readyReplicas"), replicas(o))), age(o, now)];
                cells.extend(template_cells(o).into_iter().take(2));
                cells
            },
        ),
        ("apps", "DaemonSet") => printer(
            &[
                NAME,
                ("Desired", "integer", "", 0, "The total number of nodes that should be running the daemon pod."),
                ("Current", "integer", "", 0, "The number of nodes that are running at least 1 daemon pod."),
                (
                    "Ready",
                    "integer",
                    "",
                    0,
                    "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
                ),
                ("Up-to-date", "integer", "", 0, "The total number of nodes that are running updated daemon pod"),
                (
                    "Available",
                    "integer",
                    "",
                    0,
                    "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.",
                ),
                (
                    "Node Selector",
                    "string",
                    "",
                    0,
                    "NodeSelector is a selector which must be true for the pod to fit on a node.",
                ),
                AGE,
                CONTAINERS,
                IMAGES,
                SELECTOR,
            ],
            |o, now| {
                let mut cells = vec![name(o)];
                for field in [
                    "desiredNumberScheduled",
                    "currentNumberScheduled",
                    "numberReady",
                    "updatedNumberScheduled",
                    "numberAvailable",
                ] {
                    cells.push(json!(int(o, &format!("/status/{field}"))));
                }
                cells.push(json!(format_labels(o.pointer("/spec/template/spec/nodeSelector"))));
                cells.push(age(o, now));
                cells.extend(template_cells(o));
                cells
            },
        ),
        ("", "Pod") => printer(
            &[
                NAME,
                ("Ready", "string", "", 0, "The aggregate readiness state of this pod for accepting traffic."),
                ("Status", "string", "", 0, "The aggregate status of the containers in this pod."),
                (
                    "Restarts",
                    "string",
                    "",
                    0,
                    "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                ),
                AGE,
                (
                    "IP",
                    "string",
                    "",
                    1,
                    "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
                ),
                ("Node", "string", "", 1, "NodeName indicates in which node this pod is scheduled."),
                (
                    "Nominated Node",
                    "string",
                    "",
                    1,
                    "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
                ),
                (
                    "Readiness Gates",
                    "string",
                    "",
                    1,
                    "If specified, all readiness gates will be evaluated for pod readiness.",
                ),
            ],
            pod_cells,
        ),
        ("batch", "Job") => printer(
            &[
                NAME,
                ("Status", "string", "", 0, "Status of the job."),
                ("Completions", "string", "", 0, "The completion status of the job."),
                ("Duration", "string", "", 0, "Time required to complete the job."),
                AGE,
                CONTAINERS,
                IMAGES,
                SELECTOR,
            ],
            job_cells,
        ),
        ("", "Service") => printer(
            &[
                NAME,
                ("Type", "string", "", 0, "type determines how the Service is exposed."),
                (
                    "Cluster-IP",
                    "string",
                    "",
                    0,
                    "clusterIP is the IP address of the service and is usually assigned randomly.",
                ),
                (
                    "External-IP",
                    "string",
                    "",
                    0,
                    "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
                ),
                ("Port(s)", "string", "", 0, "The list of ports that are exposed by this service."),
                AGE,
                (
                    "Selector",
                    "string",
                    "",
                    1,
                    "Route service traffic to pods with label keys and values matching this selector.",
                ),
            ],
            service_cells,
        ),
        ("", "Node") => printer(
            &[
                NAME,
                ("Status", "string", "", 0, "The status of the node"),
                ("Roles", "string", "", 0, "The roles of the node"),
                AGE,
                ("Version", "string", "", 0, "Kubelet Version reported by the node."),
                ("Internal-IP", "string", "", 1, "List of addresses reachable to the node."),
            ],
            node_cells,
        ),
        ("", "Endpoints") => {
            printer(&[NAME, ("Endpoints", "string", "", 0, "Endpoints of the service"), AGE], endpoints_cells)
        }
        ("", "Event") | ("events.k8s.io", "Event") => printer(
            &[
                (
                    "Last Seen",
                    "string",
                    "",
                    0,
                    "The time at which the most recent occurrence of this event was recorded.",
                ),
                (
                    "Type",
                    "string",
                    "",
                    0,
                    "Type of this event (Normal, Warning), new types could be added in the future",
                ),
                (
                    "Reason",
                    "string",
                    "",
                    0,
                    "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
                ),
                ("Object", "string", "", 0, "The object that this event is about."),
                (
                    "Subobject",
                    "string",
                    "",
                    1,
                    "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
                ),
                (
                    "Source",
                    "string",
                    "",
                    1,
                    "The component reporting this event. Should be a short machine understandable string.",
                ),
                ("Message", "string", "", 0, "A human-readable description of the status of this operation."),
                (
                    "First Seen",
                    "string",
                    "",
                    1,
                    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
                ),
                ("Count", "string", "", 1, "The number of times this event has occurred."),
                ("Name", "string", "name", 1, NAME_DESCRIPTION),
            ],
            event_cells,
        ),
        ("", "ConfigMap") => printer(&[NAME, ("Data", "integer", "", 0, "Number of data entries"), AGE], |o, now| {
            let count = entries(o, "/data") + entries(o, "/binaryData");
            vec![name(o), json!(count), age(o, now)]
        }),
        ("", "Secret") => printer(
            &[
                NAME,
                ("Type", "string", "", 0, "The type of the secret"),
                ("Data", "integer", "", 0, "The number of data entries in the secret"),
                AGE,
            ],
            |o, now| vec![name(o), json!(text(o, "/type")), json!(entries(o, "/data")), age(o, now)],
        ),
        ("", "Namespace") => {
            printer(&[NAME, ("Status", "string", "", 0, "The status of the namespace"), AGE], |o, now| {
                vec![name(o), json!(text(o, "/status/phase")), age(o, now)]
            })
        }
        ("", "ServiceAccount") => printer(
            &[
                NAME,
                (
                    "Secrets",
                    "string",
                    "",
                    0,
                    "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
                ),
                AGE,
            ],
            |o, now| vec![name(o), json!(entries(o, "/secrets")), age(o, now)],
        ),
        ("coordination.k8s.io", "Lease") => {
            printer(&[NAME, ("Holder", "string", "", 0, "The holder of the lease"), AGE], |o, now| {
                vec![name(o), json!(text(o, "/spec/holderIdentity")), age(o, now)]
            })
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => {
            printer(&[NAME, ("Created At", "date", "", 0, AGE_DESCRIPTION)], |o, _| {
                vec![name(o), o.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null)]
            })
        }
        _ => None,
    }
}

fn column(spec: &ColumnSpec) -> Value {
    let (name, kind, format, priority, description) = *spec;
    json!({"name": name, "type": kind, "format": format, "description": description, "priority": priority})
}

/// A CRD version's printer columns, or the default Age column.
fn custom_columns(version: &VersionInfo) -> Vec<Value> {
    let defined = version
        .definition
        .as_deref()
        .and_then(|d| d.get("additionalPrinterColumns"))
        .and_then(Value::as_array)
        .filter(|columns| !columns.is_empty())
        .cloned();
    defined.unwrap_or_else(|| vec![json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})])
}

/// The column definitions of a resource at a version.
pub fn columns(info: &ResourceInfo, version: &VersionInfo) -> Vec<Value> {
    if info.custom {
        let mut out = vec![column(&NAME)];
        out.extend(custom_columns(version).iter().map(|c| {
            json!({
                "name": c.get("name").cloned().unwrap_or_default(),
                "type": c.get("type").cloned().unwrap_or_default(),
                "format": c.get("format").cloned().unwrap_or(json!("")),
                "description": c.get("description").cloned().unwrap_or(json!("")),
                "priority": c.get("priority").cloned().unwrap_or(json!(0)),
            })
        }));
        return out;
    }
    match printer(info) {
        Some(printer) => printer.columns.iter().map(column).collect(),
        None => vec![column(&NAME), column(&AGE)],
    }
}

/// How the cells of a table's rows are made, worked out once per table (a CRD's column paths
/// are parsed once, not for every object).
enum RowCells {
    /// A CRD version's printer columns: each one's path (`None` where it does not parse: its
    /// cells are empty) and type.
    Custom(Vec<(Option<JsonPathTemplate>, String)>),
    /// A built-in kind's printer.
    Printer(fn(&Value, Timestamp) -> Vec<Value>),
    /// Name and Age.
    NameAndAge,
}

impl RowCells {
    fn new(info: &ResourceInfo, version: &VersionInfo) -> RowCells {
        if info.custom {
            let columns = custom_columns(version)
                .iter()
                .map(|column| {
                    let path = column.get("jsonPath").and_then(Value::as_str).unwrap_or_default();
                    let kind = column.get("type").and_then(Value::as_str).unwrap_or_default();
                    // Upstream's table convertor reads the path as the one action of a
                    // kubectl JSONPath template.
                    (JsonPathTemplate::parse(&format!("{{{path}}}")).ok(), kind.to_string())
                })
                .collect();
            return RowCells::Custom(columns);
        }
        match printer(info) {
            Some(printer) => RowCells::Printer(printer.cells),
            None => RowCells::NameAndAge,
        }
    }

    /// The cells of one object's row.
    fn of(&self, object: &Value, now: Timestamp) -> Vec<Value> {
        match self {
            RowCells::Custom(columns) => {
                let mut out = vec![name(object)];
                // As upstream's table convertor, the first value the path finds is the cell.
                out.extend(columns.iter().map(|(path, kind)| {
                    let found = path.as_ref().and_then(|path| path.values(object).into_iter().next());
                    found.map_or(Value::Null, |value| typed_cell(kind, &value, now))
                }));
                out
            }
            RowCells::Printer(cells) => cells(object, now),
            RowCells::NameAndAge => vec![name(object), age(object, now)],
        }
    }
}

/// A printer-column value typed as upstream's CRD table convertor types it.
fn typed_cell(kind: &str, value: &Value, now: Timestamp) -> Value {
    match (kind, value) {
        (_, Value::Null) => Value::Null,
        ("integer", Value::Number(n)) => {
            n.as_i64().map(Value::from).or_else(|| n.as_f64().map(|f| json!(f as i64))).unwrap_or_default()
        }
        ("number", Value::Number(n)) => n.as_f64().map(Value::from).unwrap_or_default(),
        ("boolean", Value::Bool(b)) => json!(b),
        ("string", Value::String(s)) => json!(s),
        ("string", Value::Number(_) | Value::Bool(_)) => json!(value.to_string()),
        ("string", other) => json!(other.to_string()),
        ("date", Value::String(s)) => {
            json!(s.parse::<Timestamp>().map_or("<invalid>".to_string(), |t| human_duration(now, t)))
        }
        _ => Value::Null,
    }
}

/// One row of a `Table`: the cells, and the object as `includeObject` asks (borrowed: a
/// large list is written out without copying its objects).
#[derive(serde::Serialize)]
struct Row<'a> {
    cells: Vec<Value>,
    object: Embedded<'a>,
}

#[derive(serde::Serialize)]
#[serde(untagged)]
enum Embedded<'a> {
    None(()),
    Metadata {
        kind: &'static str,
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        metadata: &'a Value,
    },
    Object(&'a Value),
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Table<'a> {
    kind: &'static str,
    api_version: &'static str,
    metadata: Value,
    column_definitions: Vec<Value>,
    rows: Vec<Row<'a>>,
}

/// A `Table` of objects, with `metadata` (resourceVersion, continue…) as given, as JSON.
pub fn table<'a>(
    info: &ResourceInfo,
    version: &VersionInfo,
    objects: impl Iterator<Item = &'a Value>,
    include: IncludeObject,
    metadata: Value,
) -> String {
    static NO_METADATA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| json!({}));
    let now = Timestamp::now();
    let row_cells = RowCells::new(info, version);
    let rows = objects
        .map(|object| Row {
            cells: row_cells.of(object, now),
            object: match include {
                IncludeObject::None => Embedded::None(()),
                IncludeObject::Metadata => Embedded::Metadata {
                    kind: "PartialObjectMetadata",
                    api_version: "meta.k8s.io/v1",
                    metadata: object.get("metadata").unwrap_or(&NO_METADATA),
                },
                IncludeObject::Object => Embedded::Object(object),
            },
        })
        .collect();
    let table = Table {
        kind: "Table",
        api_version: "meta.k8s.io/v1",
        metadata,
        column_definitions: columns(info, version),
        rows,
    };
    serde_json::to_string(&table).expect("a Table of JSON values serializes")
}

#[cfg(test)]
mod tests;
