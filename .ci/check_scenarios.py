"""Every scenario in Scenarios/ must satisfy Scenarios/schema.json, and the schema must reject the
broken examples in Tests/Fixtures/bad-scenarios (so the schema cannot silently accept anything),
except those whose "$comment" starts with "semantic:" (rules across fields, beyond JSON Schema).
Given files instead (what `pushswarm validate --print` wrote: every setting spelt out), each of
them must satisfy the schema: a key the decoder reads and the schema lacks shows there."""
import json
import pathlib
import sys

import jsonschema

root = pathlib.Path(__file__).resolve().parent.parent
schema = json.loads((root / "Scenarios" / "schema.json").read_text())
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
failures = 0
given = [pathlib.Path(argument) for argument in sys.argv[1:]]
for path in given or sorted((root / "Scenarios").glob("*.json")):
    if path.name == "schema.json":
        continue
    errors = list(validator.iter_errors(json.loads(path.read_text())))
    for error in errors:
        print(f"{path.name}: {error.json_path}: {error.message}")
    failures += len(errors)
    print(f"{path.name}: {'ok' if not errors else 'INVALID'}")
for path in [] if given else sorted((root / "Tests" / "Fixtures" / "bad-scenarios").glob("*.json")):
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError:
        continue
    if str(document.get("$comment", "")).startswith("semantic:"):
        continue
    if validator.is_valid(document):
        print(f"{path.name}: the schema accepts a scenario PushSwarm rejects")
        failures += 1
sys.exit(1 if failures else 0)
