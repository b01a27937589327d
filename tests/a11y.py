"""axe-core, the accessibility engine (the npm package pinned in package-lock.json, installed into
node_modules/ by `make venv`), injected into a Playwright page and run with WCAG 2.x A/AA and 2.2 AA
rules. Nothing downloads at test time: the script comes from node_modules."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]  # WCAG 2.0, 2.1 and 2.2, A and AA

RUN_AXE = """async (tags) => {
    const only = {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']};
    const result = await axe.run(document, only);
    return result.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary || ''})),
    }));
}"""


def axe_violations(page) -> list[dict]:
    """The WCAG 2.2 A/AA violations axe finds on the page as it is now: each {id, impact, help, nodes:
    [{target, summary}]}. Injects axe once per document (a navigation drops it)."""
    if not AXE.exists():
        raise FileNotFoundError(f"{AXE} is missing: run `make venv` (npm ci installs axe-core)")
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate(RUN_AXE, WCAG_TAGS)


def describe(violations: list[dict], where: str = "", *, per_rule: int = 5) -> str:
    """The violations as lines a person can act on: rule, impact, help, and each element's selector
    with axe's reason (the first ``per_rule`` elements of each rule)."""
    lines = [f"{len(violations)} axe violation(s){' on ' + where if where else ''}:"]
    for v in violations:
        lines.append(f"- {v['id']} ({v['impact']}): {v['help']} [{len(v['nodes'])} element(s)]")
        for node in v["nodes"][:per_rule]:
            reason = " ".join(node["summary"].split())
            lines.append(f"    {node['target']}: {reason[:300]}")
    return "\n".join(lines)


def assert_no_violations(page, where: str = "") -> None:
    """Fails with every violation's rule, element and reason in the message."""
    violations = axe_violations(page)
    assert not violations, describe(violations, where or page.url)
