"""`vault-index graph ...` and `vault-index recall`: the memory graph and recall from a terminal.

Thin commands over services/graph/graph.py and services/recall.py, the same functions the MCP tools
call. `--json` output is documented in docs/cli.md.
"""

from __future__ import annotations

import argparse
import json
import sys

from vault_index.services.graph.graph_rules import MAX_SEARCH_LIMIT
from vault_index.surfaces.cli_common import add_subquery_flags


def _json(data) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


def entity_markdown(entity: dict) -> list[str]:
    """One entity as a markdown section: its type and source, then observations and relations."""
    lines = [f"## {entity['name']} ({entity['entityType']})", "", f"source: {entity['source']}", ""]
    for item in entity["observations"]:
        lines.append(f"- {' '.join(item['text'].split())}  ({item['source']})")
    for item in entity["relations"]:
        lines.append(f"- {item['from']} -[{item['relationType']}]-> {item['to']}  ({item['source']})")
    if entity["observations"] or entity["relations"]:
        lines.append("")
    return lines


def cmd_graph_search(app, args) -> int:
    from vault_index.services.graph import graph as memory  # jsonschema and the write path: only here

    found = memory.search(args.memory_file, args.query, args.n, app.fact_visible())
    if args.json:
        print(_json({"query": args.query, "entities": found}))
    elif not found:
        print("no matching entities", file=sys.stderr)
    for entity in found if not args.json else []:
        print("\n".join(entity_markdown(entity)).rstrip() + f"\nscore: {entity['score']}\n")
    return 0


def cmd_graph_open(app, args) -> int:
    from vault_index.services.graph import graph as memory  # jsonschema and the write path: only here

    opened = memory.open_entities(args.memory_file, args.names, app.fact_visible())
    if args.json:
        print(_json(opened))
    else:
        for entity in opened["entities"]:
            print("\n".join(entity_markdown(entity)))
        for name in opened["missing"]:
            print(f"not in the graph: {name}", file=sys.stderr)
    return 3 if opened["missing"] and not opened["entities"] else 0


def cmd_graph_import(app, args) -> int:
    from vault_index.services.graph import graph as memory  # jsonschema and the write path: only here

    result = memory.import_reference(args.memory_file, args.file, args.source)
    if args.json:
        print(_json(result))
    else:
        added = result["added"]
        print(f"imported {added['entity']} entities, {added['observation']} observations, "
              f"{added['relation']} relations into {result['memory_file']}; "
              f"{len(result['skipped'])} already present")
    return 0


def cmd_graph_check(app, args) -> int:
    from vault_index.services.graph import graph as memory  # jsonschema and the write path: only here
    from vault_index.services.graph.graph_rules import fact_roots

    # below the folders graph_create takes a source in: walkthrough K's personal note, taken with the
    # server in $HOME, failed here as hidden below the home folder
    problems = memory.check_graph(args.memory_file, fact_roots(app, app.sources()))
    if args.json:
        print(_json({"memory_file": str(args.memory_file), "problems": problems}))
    else:
        for problem in problems:
            print(problem)
        if not problems:
            print(f"{args.memory_file}: no problems", file=sys.stderr)
    return 1 if problems else 0


def cmd_graph_show(app, args) -> int:
    from vault_index.services.graph import graph as memory  # jsonschema and the write path: only here

    graph = memory.load(args.memory_file, app.fact_visible())
    entities = [graph.view(e) for e in sorted(graph.entities.values(), key=lambda e: e["name"].casefold())]
    if args.json:
        print(_json({"memory_file": str(args.memory_file), "entities": entities}))
        return 0
    print(f"# Memory graph\n\n{args.memory_file}: {len(entities)} entities\n")
    for entity in entities:
        print("\n".join(entity_markdown(entity)))
    return 0


def cmd_recall(app, args) -> int:
    from vault_index.services.access.access import visible_entities
    from vault_index.services.recall import recall
    from vault_index.services.search.search import Filters
    from vault_index.surfaces.callers import local_read_scope
    from vault_index.surfaces.cli_common import adopt, also_line, role_filters, subqueries_from

    subqueries = subqueries_from(args)
    adopt(app, args)  # the project's own notes, as the agent there sees them (ADR 0020), with progress
    # the local person's read grants, as the MCP recall tool applies them
    scope = local_read_scope(app)[1]
    found = recall(app, args.memory_file, args.query, args.n, filters=role_filters(app, Filters()),
                   graph_filter=lambda entities: visible_entities(entities, scope), subqueries=subqueries)
    if args.json:
        print(_json(found))
        return 0
    from vault_index.surfaces.notices import print_notices

    print_notices(found["notices"], app.settings.model_cache, args.silent)
    for title, hits in (("Notes", found["notes"]), ("Lessons", found["lessons"])):
        print(f"# {title}\n")
        for hit in hits:
            snippet = " ".join(hit["snippet"].split())
            print(f"- {hit['display']}:{hit['line_start']}-{hit['line_end']}  {hit['heading']}")
            print(f"  {snippet[:200]}{'…' if len(snippet) > 200 else ''}")
            if hit.get("more"):
                print(f"  {also_line(hit['also'], hit['more'])}")
        print("" if hits else "(none)\n")
    print("# Graph\n")
    for entity in found["graph"]:
        print("\n".join(entity_markdown(entity)))
    if not found["graph"]:
        print("(none)")
    return 0


def add_parsers(sub, common: argparse.ArgumentParser, memory_option: argparse.ArgumentParser) -> None:
    """The `graph` command group and `recall`, on the top-level subparsers `sub`."""
    parents = [common, memory_option]
    group = sub.add_parser("graph", help="the memory graph: search, open, import, check, show")
    graph_sub = group.add_subparsers(dest="graph_command", metavar="ACTION", required=True)

    p = graph_sub.add_parser("search", parents=parents, help="entities matching words, with their facts")
    p.add_argument("query")
    p.add_argument("-n", type=int, default=10, help=f"number of entities (1-{MAX_SEARCH_LIMIT}, default 10)")
    p.set_defaults(run=cmd_graph_search)

    p = graph_sub.add_parser("open", parents=parents, help="print named entities in full")
    p.add_argument("names", nargs="+", metavar="NAME", help="entity names (any case)")
    p.set_defaults(run=cmd_graph_open)

    p = graph_sub.add_parser("import", parents=parents, help="import the reference memory server's JSONL")
    p.add_argument("file", help="a memory.jsonl written by the reference memory MCP server")
    p.add_argument("--source", help="the file every imported fact names as its source (default: FILE)")
    p.set_defaults(run=cmd_graph_import)

    p = graph_sub.add_parser("check", parents=parents, help="list problems in the memory file (exit 1 if any)")
    p.set_defaults(run=cmd_graph_check)

    p = graph_sub.add_parser("show", parents=parents, help="the whole graph as markdown, grouped by entity")
    p.set_defaults(run=cmd_graph_show)

    p = sub.add_parser("recall", parents=parents, help="search notes, lessons and the graph together")
    p.add_argument("query")
    p.add_argument("-n", type=int, default=5, help="items per list (1-20, default 5)")
    add_subquery_flags(p)
    p.set_defaults(run=cmd_recall)
