"""What HTML says of its elements, as browsers read them: which stand alone, which start a block,
which hold text that is never translated, and which end tags a document may leave out.

Names are lowercase (html.parser's and the `html` dialect's folding).
"""

from __future__ import annotations

from collections.abc import Mapping

# elements that have no content and no end tag
VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())

# elements that start a block of their own: a boundary between words and between translated blocks
# (flow content that is not phrasing content, and the parts of tables, lists, forms and the document)
BLOCK = frozenset(
    """html head body title address article aside blockquote center details dialog dd div dl dt
    fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr li main menu nav ol p
    pre search section summary table caption colgroup thead tbody tfoot tr td th ul legend option
    optgroup select noscript""".split()
)

# elements whose content is not prose to translate: code, raw text (script, style), form values,
# foreign content (svg, math), inert templates
KEPT = frozenset("script style pre textarea code kbd samp var svg math template".split())

# A start tag ends open elements whose end tag may be left out: each search walks down the open
# elements from the innermost, no further than the first in its scope, and ends every element down
# to the outermost it found of those it closes.
Search = tuple[frozenset[str], frozenset[str]]  # (elements it ends, where it stops)


def _search(closes: str, scope: str) -> Search:
    return frozenset(closes.split()), frozenset(scope.split())


_PARAGRAPH = _search("p", "button table td th caption template html marquee object applet")
_TABLE = "table thead tbody tfoot"


def _implied_ends() -> dict[str, tuple[Search, ...]]:
    ends: dict[str, tuple[Search, ...]] = {
        "li": (_search("li", "ul ol menu"),),
        "dt": (_search("dt dd", "dl"),),
        "dd": (_search("dt dd", "dl"),),
        "td": (_search("td th", "tr " + _TABLE),),
        "th": (_search("td th", "tr " + _TABLE),),
        "tr": (_search("tr td th", _TABLE),),
        "option": (_search("option", "select datalist optgroup"),),
        "optgroup": (_search("option optgroup", "select datalist"),),
        "rt": (_search("rt rp", "ruby"),),
        "rp": (_search("rt rp", "ruby"),),
    }
    for name in "thead tbody tfoot caption colgroup".split():
        ends[name] = (_search("thead tbody tfoot tr td th caption colgroup", "table"),)
    # a block that may not sit inside a paragraph ends it
    for name in """address article aside blockquote center details dialog dir div dl fieldset figcaption
    figure footer header hgroup main menu nav ol p search section summary ul h1 h2 h3 h4 h5 h6 pre
    listing form li dd dt plaintext table hr xmp""".split():
        ends[name] = (*ends.get(name, ()), _PARAGRAPH)
    return ends


IMPLIED_ENDS: Mapping[str, tuple[Search, ...]] = _implied_ends()
