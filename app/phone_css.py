"""The phone (issue 16): a student on a 390 x 844 phone reads every page without sideways scrolling,
with charts planned for the phone's column and touch targets of at least 44 x 44 px.

Two parts, one call from the entry point (``phone_ui``):

- ``PHONE_CSS``: rules under a max-width media query, so wider screens never see them.
- A viewport probe (an ``st.components.v2`` component, no iframe) that tells the server whether the
  window is narrow. Plotly figures are laid out in pixels on the server, so a phone's column needs
  its own plan (one head a row, larger cells); CSS alone cannot re-flow them. The first run guesses
  from the request's User-Agent (a phone's says 'Mobile'); a window whose width the guess got wrong
  reports once, which reruns the page once.
"""

from __future__ import annotations

import streamlit as st

from app.charts import figure_cache
from app.per_run import PerRun
from app.session import session_keys

NARROW_MAX_PX = 640  # Streamlit stacks columns below this width; so do our figures
PHONE_COLUMN_PX = 358  # a 390-px phone's main column (Streamlit pads it 16 px a side)
TOUCH_PX = 44  # the least side of a touch target (WCAG 2.5.5; Apple's and Google's guidance)
PROBE_KEY = "viewport_probe"
FIRST_GUESS = "phone_first_guess"  # session key: the User-Agent said phone (first_guess)
session_keys.register(session_keys.Key(FIRST_GUESS, __name__))

# Streamlit 1.67's dark page (a phone set to dark mode gets it): the formulas' edge covers match it.
DARK_PAGE, DARK_PAGE_CLEAR = "rgb(23 22 20)", "rgb(23 22 20 / 0)"
PHONE_CSS = f"""<style>
/* The probe and this sheet take no room, nor their wrapper (its gap would push the page down). */
.st-key-mha_phone, [data-testid="stLayoutWrapper"]:has(> .st-key-mha_phone) {{ display: none; }}
/* --- Phone (app/phone_css.py): only below {NARROW_MAX_PX} px ------------------------------- */
@media (max-width: {NARROW_MAX_PX - 1}px) {{
  /* Touch targets of at least {TOUCH_PX} x {TOUCH_PX} px: buttons, pills, tabs, links of the
     navigation, the header's buttons, the sidebar's arrows. */
  [data-testid="stMain"] button, [data-testid="stSidebar"] button, [data-testid="stBottom"] button,
  [data-testid="stSidebarNavLink"], [data-testid="stTab"], [data-testid="stExpandSidebarButton"],
  [data-testid="stMainMenuButton"], [data-testid="stHeader"] button, [data-testid="stPageLink-NavLink"],
  [data-testid="stLinkButton"] a, [data-testid="stDownloadButton"] button,
  [data-testid="stExpander"] summary {{
    min-height: {TOUCH_PX}px !important;
    min-width: {TOUCH_PX}px !important;
  }}
  /* A help icon stays 16 px to the eye; its button is {TOUCH_PX} px to the thumb. */
  [data-testid="stTooltipHoverTarget"] button {{
    display: inline-flex; align-items: center; justify-content: center;
    margin: -14px;
  }}
  [data-testid="stCheckbox"] label, [data-testid="stRadio"] label, [data-baseweb="select"] > div,
  [data-testid="stTextInputRootElement"], [data-testid="stNumberInputContainer"] {{
    min-height: {TOUCH_PX}px;
    align-items: center;
  }}
  /* A focused skip link (app/style.py) wraps inside the screen rather than running past it. */
  #mha-skip a {{ white-space: normal !important; max-width: calc(100vw - 16px); box-sizing: border-box; }}
  /* Heading anchors show on hover only, which a phone has not. */
  [data-testid="stHeaderActionElements"] {{ display: none; }}
  /* The chart toolbar (zoom, download) covers legends and titles on a narrow chart. */
  .js-plotly-plot .modebar-container {{ display: none !important; }}
  /* Nothing pushes the page sideways: long tokens wrap, wide formulas and tables scroll in place. */
  [data-testid="stMain"] {{ overflow-wrap: break-word; overflow-x: hidden; }}
  [data-testid="stTab"] {{ flex-shrink: 0; }} /* tabs scroll in their row; their labels never overlap */
  [data-testid="stMain"] .katex-display, [data-testid="stMarkdownContainer"] table,
  [data-testid="stCode"] pre {{
    display: block; max-width: 100%; overflow-x: auto; overflow-y: hidden;
  }}
  /* A formula in the text's size (the desktop's and the presenter's are larger), so most fit the
     column; one that still does not shows a shadow at the edge it scrolls past (a cut formula gave
     no sign that it went on). Doubled class: above the presenter's own rule. */
  [data-testid="stMain"] .katex-display > .katex.katex {{ font-size: 1.1em; }}
  [data-testid="stMain"] .katex-display {{
    --page: light-dark(#fff, {DARK_PAGE}); --clear: light-dark(#fff0, {DARK_PAGE_CLEAR});
    --shade: light-dark(#00000073, #ffffff59);
    background:
      linear-gradient(to right, var(--page) 30%, var(--clear)) left / 48px 100% no-repeat local,
      linear-gradient(to left, var(--page) 30%, var(--clear)) right / 48px 100% no-repeat local,
      radial-gradient(farthest-side at 0 50%, var(--shade), #0000) left / 14px 100% no-repeat scroll,
      radial-gradient(farthest-side at 100% 50%, var(--shade), #0000) right / 14px 100% no-repeat scroll;
  }}
  /* A table's toolbar is always shown on a phone (no hover) and sits 44 px above the table: room
     for it, or it covers the caption above. */
  [data-testid="stElementContainer"]:has(> [data-testid="stFullScreenFrame"] > [data-testid="stDataFrame"]) {{
    margin-top: 30px;
  }}
  /* Pictures shrink to the column; a formula's radicals (KaTeX's own svgs) keep their size, or
     "sqrt(d_k)" reads "d_k". */
  [data-testid="stMain"] img,
  [data-testid="stMain"] svg:not(.main-svg):not(.katex svg) {{ max-width: 100%; height: auto; }}
}}
</style>"""

# Reports once the page's run has finished, as a tap would: a report during the first run would stop
# it before the page's widgets were drawn, and their state (the Real model page's text) came back empty.
PROBE_JS = f"""
export default function (component) {{
  const {{ setStateValue, data }} = component;
  const narrow = window.innerWidth < {NARROW_MAX_PX};
  if ((data && data.narrow === narrow) || window.mhaNarrowSent === narrow) return;
  const app = document.querySelector("[data-testid='stApp']");
  const idle = () => !app || app.getAttribute("data-test-script-state") !== "running";
  const report = () => {{
    if (!idle() || window.mhaNarrowSent === narrow) return false;
    window.mhaNarrowSent = narrow;
    setStateValue("narrow", narrow);
    return true;
  }};
  if (report()) return;
  const watch = new MutationObserver(() => {{ if (report()) watch.disconnect(); }});
  watch.observe(app, {{ attributes: true, attributeFilter: ["data-test-script-state"] }});
}}
"""

_probe = st.components.v2.component("mha_viewport_probe", html="<span></span>", js=PROBE_JS)


def phone_agent(user_agent: object) -> bool:
    """A browser that says it is a phone: 'Mobi' in its User-Agent (MDN's advice; phones' browsers
    say 'Mobile', tablets' do not)."""
    return isinstance(user_agent, str) and "Mobi" in user_agent


def first_guess() -> bool:
    """Narrow or not before the probe has said anything: the websocket request's User-Agent. A phone
    is then planned for in its first run, without the probe's report and a second run; a phone held
    sideways or a narrow desktop window is corrected by the probe's report. Read once per session
    (the headers are the websocket's, fixed for the session; reading them took a twentieth of a run)."""
    ss = st.session_state
    if FIRST_GUESS not in ss:
        ss[FIRST_GUESS] = phone_agent(st.context.headers.get("User-Agent"))
    return ss[FIRST_GUESS]


def narrow() -> bool:
    """This session's window is a phone's (as its browser last reported, or as its request said)."""
    value = st.session_state.get(PROBE_KEY)
    if value is None:
        return first_guess()
    return bool(getattr(value, "narrow", None) or (isinstance(value, dict) and value.get("narrow")))


def _session_column_width() -> int | None:
    """The main column's width to plan figures for on a phone, or None (the figures' own default)."""
    return PHONE_COLUMN_PX if narrow() else None


column_width = PerRun(_session_column_width)  # read once per run: every figure asks for it


def phone_ui() -> None:
    """The phone's stylesheet, the viewport probe, and figures planned for the phone's column."""
    with st.container(key="mha_phone"):
        st.html(PHONE_CSS)
        _probe(key=PROBE_KEY, data={"narrow": narrow()}, default={"narrow": first_guess()},
               on_narrow_change=_noop, height=0)
    column_width.start()
    figure_cache.column_width = column_width


def _noop() -> None:
    """A state change needs a callback to be a state at all; the rerun it causes is the point."""
