"""A realistic large catalog for the tool-search measurements: 300 tools from 10 servers.

Each server is a product (GitHub, Slack, Jira, ...) with five resources; each resource has six
operations (list, get, create, update, delete, search), described the way real MCP servers
describe theirs: a sentence saying what the tool does, one saying when to use it, and an input
schema whose properties carry descriptions. :data:`TASKS` are 20 tasks in plain words, each
with the one tool that does it and the arguments a scripted agent fills in.
"""

from __future__ import annotations

from typing import Any

from mcp.types import Tool, ToolAnnotations

Field = tuple[str, str, str]  # (name, JSON type, description)

# server -> (product, [(resource, plural words, what it is, [fields])])
SERVERS: dict[str, tuple[str, list[tuple[str, str, str, list[Field]]]]] = {
    "github": (
        "GitHub",
        [
            (
                "issue",
                "issues bugs tickets",
                "an issue (bug report or feature request) in a repository",
                [
                    ("repo", "string", "repository as owner/name"),
                    ("title", "string", "issue title"),
                    ("body", "string", "issue body in Markdown"),
                    ("labels", "array", "label names"),
                ],
            ),
            (
                "pull_request",
                "pull requests PRs merge requests code review",
                "a pull request proposing changes",
                [
                    ("repo", "string", "repository as owner/name"),
                    ("head", "string", "branch with the changes"),
                    ("base", "string", "branch to merge into"),
                    ("title", "string", "pull request title"),
                ],
            ),
            (
                "repository",
                "repositories repos projects",
                "a Git repository",
                [
                    ("owner", "string", "user or organisation"),
                    ("name", "string", "repository name"),
                    ("private", "boolean", "whether the repository is private"),
                ],
            ),
            (
                "branch",
                "branches refs",
                "a branch of a repository",
                [
                    ("repo", "string", "repository as owner/name"),
                    ("branch", "string", "branch name"),
                    ("from_ref", "string", "commit or branch to start from"),
                ],
            ),
            (
                "workflow_run",
                "workflow runs CI builds actions pipelines",
                "a GitHub Actions workflow run",
                [
                    ("repo", "string", "repository as owner/name"),
                    ("workflow", "string", "workflow file name"),
                    ("ref", "string", "branch or tag to run on"),
                ],
            ),
        ],
    ),
    "slack": (
        "Slack",
        [
            (
                "message",
                "messages posts chat",
                "a message posted in a channel or thread",
                [
                    ("channel", "string", "channel id or #name"),
                    ("text", "string", "message text (mrkdwn)"),
                    ("thread_ts", "string", "timestamp of the parent message to reply in a thread"),
                ],
            ),
            (
                "channel",
                "channels rooms conversations",
                "a public or private channel",
                [
                    ("name", "string", "channel name without #"),
                    ("is_private", "boolean", "private channel"),
                    ("topic", "string", "channel topic"),
                ],
            ),
            (
                "user",
                "users members people profiles",
                "a member of the workspace",
                [("user", "string", "user id or email"), ("status_text", "string", "custom status text")],
            ),
            (
                "reaction",
                "reactions emoji",
                "an emoji reaction on a message",
                [
                    ("channel", "string", "channel id"),
                    ("timestamp", "string", "message timestamp"),
                    ("emoji", "string", "emoji name without colons"),
                ],
            ),
            (
                "reminder",
                "reminders",
                "a reminder for a user",
                [("text", "string", "what to be reminded of"), ("time", "string", "when, e.g. 'in 2 hours'")],
            ),
        ],
    ),
    "jira": (
        "Jira",
        [
            (
                "ticket",
                "tickets stories tasks epics",
                "a Jira issue (story, task, bug or epic)",
                [
                    ("project", "string", "project key such as OPS"),
                    ("summary", "string", "one-line summary"),
                    ("description", "string", "details"),
                    ("issue_type", "string", "Story, Task, Bug or Epic"),
                ],
            ),
            (
                "sprint",
                "sprints iterations",
                "a sprint of a Scrum board",
                [
                    ("board_id", "integer", "board id"),
                    ("name", "string", "sprint name"),
                    ("goal", "string", "sprint goal"),
                ],
            ),
            (
                "comment",
                "comments notes",
                "a comment on a Jira issue",
                [("issue_key", "string", "issue key such as OPS-12"), ("body", "string", "comment text")],
            ),
            (
                "transition",
                "transitions status workflow",
                "a workflow transition of an issue",
                [("issue_key", "string", "issue key"), ("status", "string", "target status such as Done")],
            ),
            (
                "worklog",
                "worklogs work log time tracking hours",
                "time logged on an issue",
                [("issue_key", "string", "issue key"), ("time_spent", "string", "duration such as 2h 30m")],
            ),
        ],
    ),
    "postgres": (
        "PostgreSQL",
        [
            (
                "table",
                "tables relations",
                "a table of the database",
                [
                    ("schema", "string", "schema name"),
                    ("table", "string", "table name"),
                    ("columns", "array", "column definitions"),
                ],
            ),
            (
                "query",
                "queries SQL select rows",
                "a read-only SQL query and its rows",
                [("sql", "string", "SELECT statement"), ("params", "array", "bind parameters")],
            ),
            (
                "index",
                "indexes indices",
                "an index on a table",
                [
                    ("table", "string", "table name"),
                    ("columns", "array", "indexed columns"),
                    ("unique", "boolean", "unique index"),
                ],
            ),
            (
                "role",
                "roles users grants permissions",
                "a database role and its privileges",
                [("role", "string", "role name"), ("privileges", "array", "privileges such as SELECT")],
            ),
            (
                "backup",
                "backups dumps snapshots restore",
                "a logical backup of the database",
                [("database", "string", "database name"), ("format", "string", "custom, plain or tar")],
            ),
        ],
    ),
    "filesystem": (
        "workspace file system",
        [
            (
                "file",
                "files documents text",
                "a file in the workspace",
                [
                    ("path", "string", "file path inside the workspace"),
                    ("content", "string", "file contents"),
                ],
            ),
            (
                "directory",
                "directories folders tree",
                "a directory in the workspace",
                [("path", "string", "directory path"), ("recursive", "boolean", "include subdirectories")],
            ),
            (
                "symlink",
                "symlinks symbolic links",
                "a symbolic link",
                [("path", "string", "link path"), ("target", "string", "what it points to")],
            ),
            (
                "archive",
                "archives zip tarball",
                "a zip or tar archive",
                [("path", "string", "archive path"), ("files", "array", "paths to include")],
            ),
            (
                "permission",
                "permissions mode chmod",
                "the mode bits of a file",
                [("path", "string", "file path"), ("mode", "string", "octal mode such as 0644")],
            ),
        ],
    ),
    "calendar": (
        "Google Calendar",
        [
            (
                "event",
                "events meetings appointments",
                "a calendar event or meeting",
                [
                    ("calendar_id", "string", "calendar id, 'primary' for the user's"),
                    ("summary", "string", "title"),
                    ("start", "string", "RFC 3339 start time"),
                    ("end", "string", "RFC 3339 end time"),
                    ("attendees", "array", "attendee emails"),
                ],
            ),
            (
                "calendar",
                "calendars",
                "a calendar",
                [("summary", "string", "calendar name"), ("time_zone", "string", "IANA time zone")],
            ),
            (
                "attendee",
                "attendees invitees guests",
                "an attendee of an event",
                [("event_id", "string", "event id"), ("email", "string", "attendee email")],
            ),
            (
                "free_busy",
                "availability free busy slots",
                "free and busy time of people",
                [
                    ("emails", "array", "people to check"),
                    ("time_min", "string", "from"),
                    ("time_max", "string", "until"),
                ],
            ),
            (
                "room",
                "rooms meeting rooms resources",
                "a bookable meeting room",
                [("building", "string", "building name"), ("capacity", "integer", "minimum seats")],
            ),
        ],
    ),
    "email": (
        "Gmail",
        [
            (
                "email",
                "emails mails inbox",
                "an email message",
                [
                    ("to", "array", "recipient addresses"),
                    ("subject", "string", "subject line"),
                    ("body", "string", "message body"),
                ],
            ),
            (
                "draft",
                "drafts unsent",
                "an unsent email draft",
                [("to", "array", "recipients"), ("subject", "string", "subject"), ("body", "string", "body")],
            ),
            (
                "label",
                "labels folders tags",
                "a mailbox label",
                [("name", "string", "label name"), ("color", "string", "label colour")],
            ),
            (
                "filter",
                "filters rules",
                "a rule applied to incoming mail",
                [("from", "string", "sender to match"), ("add_label", "string", "label to apply")],
            ),
            (
                "attachment",
                "attachments files",
                "a file attached to a message",
                [("message_id", "string", "message id"), ("attachment_id", "string", "attachment id")],
            ),
        ],
    ),
    "drive": (
        "Google Drive",
        [
            (
                "document",
                "documents docs files",
                "a file stored in Drive",
                [
                    ("file_id", "string", "Drive file id"),
                    ("name", "string", "file name"),
                    ("mime_type", "string", "MIME type"),
                ],
            ),
            (
                "folder",
                "folders",
                "a Drive folder",
                [("folder_id", "string", "folder id"), ("name", "string", "folder name")],
            ),
            (
                "share",
                "shares sharing access permissions",
                "who may open a file",
                [
                    ("file_id", "string", "file id"),
                    ("email", "string", "person to share with"),
                    ("role", "string", "reader, commenter or writer"),
                ],
            ),
            (
                "revision",
                "revisions versions history",
                "a saved version of a file",
                [("file_id", "string", "file id"), ("revision_id", "string", "revision id")],
            ),
            (
                "spreadsheet",
                "spreadsheets sheets rows cells",
                "a Google Sheets spreadsheet",
                [
                    ("spreadsheet_id", "string", "spreadsheet id"),
                    ("range", "string", "A1 range"),
                    ("values", "array", "rows of cell values"),
                ],
            ),
        ],
    ),
    "kubernetes": (
        "Kubernetes",
        [
            (
                "pod",
                "pods containers",
                "a pod running containers",
                [
                    ("namespace", "string", "namespace"),
                    ("name", "string", "pod name"),
                    ("container", "string", "container name"),
                ],
            ),
            (
                "deployment",
                "deployments rollouts replicas",
                "a deployment managing replicas",
                [
                    ("namespace", "string", "namespace"),
                    ("name", "string", "deployment name"),
                    ("replicas", "integer", "desired replicas"),
                    ("image", "string", "container image"),
                ],
            ),
            (
                "service",
                "services endpoints load balancer",
                "a service exposing pods",
                [
                    ("namespace", "string", "namespace"),
                    ("name", "string", "service name"),
                    ("port", "integer", "service port"),
                ],
            ),
            (
                "config_map",
                "config maps configuration settings",
                "a ConfigMap of settings",
                [
                    ("namespace", "string", "namespace"),
                    ("name", "string", "ConfigMap name"),
                    ("data", "object", "key-value settings"),
                ],
            ),
            (
                "pod_log",
                "logs output stdout",
                "the log output of a pod's container",
                [
                    ("namespace", "string", "namespace"),
                    ("pod", "string", "pod name"),
                    ("tail_lines", "integer", "last lines to return"),
                ],
            ),
        ],
    ),
    "stripe": (
        "Stripe",
        [
            (
                "customer",
                "customers clients buyers accounts",
                "a paying customer",
                [("email", "string", "customer email"), ("name", "string", "full name")],
            ),
            (
                "invoice",
                "invoices bills billing",
                "an invoice for a customer",
                [
                    ("customer", "string", "customer id"),
                    ("amount", "integer", "amount in cents"),
                    ("currency", "string", "ISO currency code"),
                ],
            ),
            (
                "refund",
                "refunds money back",
                "a refund of a charge",
                [
                    ("charge", "string", "charge id"),
                    ("amount", "integer", "amount in cents to refund"),
                    ("reason", "string", "duplicate, fraudulent or requested_by_customer"),
                ],
            ),
            (
                "subscription",
                "subscriptions plans recurring",
                "a recurring subscription",
                [("customer", "string", "customer id"), ("price", "string", "price id")],
            ),
            (
                "payment",
                "payments charges payment intents",
                "a payment (payment intent)",
                [
                    ("amount", "integer", "amount in cents"),
                    ("currency", "string", "ISO currency code"),
                    ("customer", "string", "customer id"),
                ],
            ),
        ],
    ),
}

VERBS: dict[str, tuple[str, str, bool]] = {
    # verb -> (sentence template, when-to-use template, read-only)
    "list": (
        "List {plural} in {product}, newest first, with paging.",
        "Use it to browse, enumerate or count {plural}.",
        True,
    ),
    "get": (
        "Get one {noun} from {product} by id, with all of its fields.",
        "Use it to read, fetch or show the contents and details of {what} ({plural}).",
        True,
    ),
    "create": (
        "Create a new {noun} in {product}.",
        "Use it to add, open, post, send, schedule, log, apply or make {what} ({plural}).",
        False,
    ),
    "update": (
        "Update an existing {noun} in {product}: change, edit, rename, scale, write or close it.",
        "Use it to modify {what} ({plural}).",
        False,
    ),
    "delete": (
        "Delete a {noun} from {product} permanently.",
        "Use it to remove, cancel or drop {what} ({plural}); it cannot be undone.",
        False,
    ),
    "search": (
        "Search {plural} in {product} by free text and filters.",
        "Use it to find or look up {plural} matching words.",
        True,
    ),
}


def _schema(verb: str, noun: str, fields: list[Field]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    if verb in ("get", "update", "delete"):
        props["id"] = {"type": "string", "description": f"id of the {noun}"}
        required.append("id")
    if verb in ("list", "search"):
        if verb == "search":
            props["query"] = {"type": "string", "description": "free-text search words"}
            required.append("query")
        props["page"] = {"type": "integer", "minimum": 1, "description": "page number, from 1"}
        props["per_page"] = {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "description": "results per page",
        }
    if verb in ("create", "update", "list", "search"):
        for name, kind, desc in fields:
            spec: dict[str, Any] = {"type": kind, "description": desc}
            if kind == "array":
                spec["items"] = {"type": "string"}
            props[name] = spec
        if verb == "create":
            required.append(fields[0][0])
    return {"type": "object", "properties": props, "required": required}


def catalog() -> dict[str, list[Tool]]:
    """Server id -> its 30 tools."""
    out: dict[str, list[Tool]] = {}
    for server, (product, resources) in SERVERS.items():
        tools: list[Tool] = []
        for noun, plural, what, fields in resources:
            label = noun.replace("_", " ")
            for verb, (sentence, when, read_only) in VERBS.items():
                desc = (
                    sentence.format(
                        noun=label, plural=label if label.endswith("s") else f"{label}s", product=product
                    )
                    + " "
                    + when.format(what=what, plural=plural)
                )
                tools.append(
                    Tool(
                        name=f"{verb}_{noun}",
                        title=f"{verb.capitalize()} {label}",
                        description=desc,
                        input_schema=_schema(verb, label, fields),
                        annotations=ToolAnnotations(
                            read_only_hint=read_only, destructive_hint=verb == "delete"
                        ),
                    )
                )
        out[server] = tools
    return out


# (task in plain words, the tool that does it, arguments the agent fills from the task)
TASKS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "open a new bug report in the acme/web GitHub repository",
        "github__create_issue",
        {"repo": "acme/web", "title": "Login fails"},
    ),
    (
        "post a message to the #deploys Slack channel",
        "slack__create_message",
        {"channel": "#deploys", "text": "v2.1 is out"},
    ),
    (
        "log 2h of work on Jira issue OPS-12",
        "jira__create_worklog",
        {"issue_key": "OPS-12", "time_spent": "2h"},
    ),
    (
        "run a read-only SQL select query against PostgreSQL",
        "postgres__create_query",
        {"sql": "SELECT count(*) FROM users"},
    ),
    ("read the contents of the file README.md in the workspace", "filesystem__get_file", {"id": "README.md"}),
    (
        "schedule a meeting event on my Google Calendar tomorrow at 10",
        "calendar__create_event",
        {"calendar_id": "primary", "summary": "Sync"},
    ),
    ("send an email to bob@example.com", "email__create_email", {"to": ["bob@example.com"], "subject": "Hi"}),
    (
        "add a Google Drive share so a colleague can open the file",
        "drive__create_share",
        {"file_id": "f1", "email": "ann@example.com"},
    ),
    (
        "scale the Kubernetes deployment web to 5 replicas",
        "kubernetes__update_deployment",
        {"id": "web", "replicas": 5},
    ),
    (
        "make a refund of a Stripe charge to the customer",
        "stripe__create_refund",
        {"charge": "ch_1", "amount": 500},
    ),
    ("find GitHub pull requests waiting for code review", "github__search_pull_request", {"query": "review"}),
    ("show the logs of a kubernetes pod", "kubernetes__get_pod_log", {"id": "web-1"}),
    (
        "apply the Done workflow transition to Jira issue OPS-7",
        "jira__create_transition",
        {"issue_key": "OPS-7", "status": "Done"},
    ),
    (
        "list the free busy availability of two people on the calendar",
        "calendar__list_free_busy",
        {"emails": ["a@example.com", "b@example.com"]},
    ),
    ("create a logical backup dump of the postgres database", "postgres__create_backup", {"database": "app"}),
    ("delete the Slack reminder about lunch", "slack__delete_reminder", {"id": "Rm1"}),
    ("list Stripe invoices of a customer", "stripe__list_invoice", {"customer": "cus_1"}),
    (
        "write rows of cell values into a Google Sheets spreadsheet",
        "drive__update_spreadsheet",
        {"id": "s1", "values": ["a", "b"]},
    ),
    (
        "create a zip archive of the build folder in the workspace",
        "filesystem__create_archive",
        {"path": "build.zip"},
    ),
    ("add a new label to my Gmail mailbox", "email__create_label", {"name": "receipts"}),
]
