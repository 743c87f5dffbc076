#!/usr/bin/python3
"""The C API's struct_size rule for scripts/abi-check.sh (docs/CAPI.md, "ABI"): is an abidiff report of
libedgetensor-c a compatible change?

  scripts/abi_struct_rule.py BASELINE.abi REPORT.txt     exit 0: compatible, 1: not (reasons on stdout)

A C struct that starts with `uint32_t struct_size` may grow at its end without a new SONAME: the caller
says how many bytes it has, and the library reads or writes only those (the model of Linux's
copy_struct_from_user). abidiff cannot know that convention, so it lists such growth as a changed
function. This script accepts a report in which every change is one of:
  - an added function or variable;
  - a struct reached through a pointer (never by value) whose first member in the baseline is
    `struct_size`, grown at its end: "type size changed" plus data members inserted at offsets at or
    after its old size;
  - inside such a struct, its last member's type changed in the same way (a nested struct that starts
    with struct_size and grew at its end: et_channel_receiver_info's stats);
  - inside such a struct, any member that is a pointer to a struct grown in the same way (its own size
    unchanged: et_pool_options.allocate when et_allocate_options grew).
Anything else (a removal, a member moved or deleted, a type renamed, a struct passed by value, a return
type, a struct without struct_size, a grown struct as an array member) is incompatible. What the report
cannot show is left to review: a pointer parameter that is an array of a grown struct is compatible only
where the library steps through it by the caller's struct_size (et_channel_publisher_get_receivers). The baseline is the abidw XML the report was made
against: it gives each struct's members and their order.
"""
import re
import sys
import xml.etree.ElementTree as ET


def structs_of(baseline_path):
    """name -> (size in bits, [(member name, offset in bits)] in offset order)."""
    out = {}
    for decl in ET.parse(baseline_path).getroot().iter("class-decl"):
        name = decl.get("name")
        if not name or decl.get("is-declaration-only") == "yes":
            continue
        members = []
        for dm in decl.findall("data-member"):
            var = dm.find("var-decl")
            if var is not None:
                members.append((var.get("name"), int(dm.get("layout-offset-in-bits", "0"))))
        members.sort(key=lambda m: m[1])
        out[name] = (int(decl.get("size-in-bits", "0")), members)
    return out


# Lines that only navigate the report: a function, its parameter, pointers, typedefs, qualifiers.
NAVIGATION = [
    re.compile(r"^\[C\] '(function|variable) .*' has some indirect sub-type changes:$"),
    re.compile(r"^in unqualified underlying type '.*':$"),
    re.compile(r"^underlying type 'typedef .*' changed:$"),
]
PARAMETER = re.compile(r"^parameter \d+ of type '.*' has sub-type changes:$")
POINTED = re.compile(r"^in pointed to type '.*':$")
STRUCT = re.compile(r"^underlying type 'struct (\w+)' changed:$")
SIZE = re.compile(r"^type size changed from (\d+) to (\d+) \(in bits\)$")
SAME_SIZE = re.compile(r"^type size hasn't changed$")
INSERTIONS = re.compile(r"^\d+ data member insertions?:$")
INSERTED = re.compile(r"^'.*', at offset (\d+) \(in bits\)$")
MEMBER_CHANGES = re.compile(r"^\d+ data member changes?:$")
MEMBER_TYPE = re.compile(r"^type of '.*?(\w+)((?:\[\d*\])*)' changed:$")


def check(baseline_path, report):
    structs = structs_of(baseline_path)
    problems = []
    lines = report.splitlines()
    section = None
    # Stack of (indent, kind, data): what encloses the current line.
    stack = []
    # A changed member that is not its struct's last: compatible only when it is a pointer (the next line
    # says "in pointed to type"); line number -> the problem it is otherwise.
    pending = {}
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        summary = re.match(r"^(Functions|Variables) changes summary: (\d+) Removed, (\d+) Changed", raw)
        if summary:
            if int(summary.group(2)):
                problems.append(f"{summary.group(2)} {summary.group(1).lower()} removed")
            continue
        header = re.match(r"^\d+ (Added|Removed) (functions?|variables?)", raw) or \
            re.match(r"^\d+ (functions?|variables?) with some indirect sub-type change", raw)
        if header:
            section = "added" if "Added" in raw else ("removed" if "Removed" in raw else "changed")
            stack = []
            continue
        if section in ("added", None):
            continue
        if section == "removed":
            problems.append(f"line {number}: removed: {raw.strip()}")
            continue
        indent = len(raw) - len(raw.lstrip())
        text = raw.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1] if stack else None
        kind = None
        data = None
        if parent and parent[1] == "member" and POINTED.match(text):
            pending.pop(parent[2], None)  # a pointer member: the struct's own layout is unchanged
        if any(p.match(text) for p in NAVIGATION):
            kind = "nav"
            data = parent[2] if parent else None
        elif PARAMETER.match(text):
            kind = "param"
        elif POINTED.match(text):
            kind = "pointer"
        elif STRUCT.match(text):
            name = STRUCT.match(text).group(1)
            # Reached through a pointer, or as the changed last member of an accepted struct.
            reached = [s[1] for s in stack if s[1] != "nav"]
            if not reached or reached[-1] not in ("pointer", "member"):
                problems.append(f"line {number}: struct {name} changed where it is passed by value")
            if name not in structs:
                problems.append(f"line {number}: struct {name} is not in the baseline")
            else:
                members = structs[name][1]
                if not members or members[0] != ("struct_size", 0):
                    problems.append(f"line {number}: struct {name} does not start with struct_size")
            kind, data = "struct", name
        elif SIZE.match(text):
            old, new = map(int, SIZE.match(text).groups())
            if not parent or parent[1] != "struct":
                problems.append(f"line {number}: a size change outside a struct: {text}")
            elif new < old:
                problems.append(f"line {number}: struct {parent[2]} shrank from {old} to {new} bits")
            kind = "size"
        elif SAME_SIZE.match(text):
            if not parent or parent[1] != "struct":
                problems.append(f"line {number}: a size note outside a struct: {text}")
            kind = "size"
        elif INSERTIONS.match(text):
            kind, data = "insertions", parent[2] if parent else None
        elif INSERTED.match(text):
            offset = int(INSERTED.match(text).group(1))
            name = parent[2] if parent and parent[1] == "insertions" else None
            if name is None or name not in structs:
                problems.append(f"line {number}: an insertion outside a known struct: {text}")
            elif offset < structs[name][0]:
                problems.append(f"line {number}: struct {name}: a member inserted at {offset} bits, inside its "
                                f"old size of {structs[name][0]} bits: {text}")
            kind = "inserted"
        elif MEMBER_CHANGES.match(text):
            kind, data = "changes", parent[2] if parent else None
        elif MEMBER_TYPE.match(text):
            member, array = MEMBER_TYPE.match(text).groups()
            name = parent[2] if parent and parent[1] == "changes" else None
            if array:
                problems.append(f"line {number}: struct {name}: member {member}{array} is an array: its grown "
                                f"elements would move each other")
            elif name is None or name not in structs:
                problems.append(f"line {number}: a member change outside a known struct: {text}")
            elif not structs[name][1] or structs[name][1][-1][0] != member:
                pending[number] = (f"line {number}: struct {name}: member {member} changed type and is neither "
                                   f"its last member nor a pointer")
            kind, data = "member", number
        else:
            problems.append(f"line {number}: not a struct_size growth: {text}")
            kind = "other"
        stack.append((indent, kind, data))
    return problems + list(pending.values())


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(sys.argv[2]) as f:
        problems = check(sys.argv[1], f.read())
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
