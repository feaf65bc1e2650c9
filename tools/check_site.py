"""Checks a built documentation site as a browser would follow it.

    python tools/check_site.py [SITE_DIR] [--config mkdocs.yml]

After `mkdocs build`: every page of mkdocs.yml's `nav` was built, and every
internal link of every built HTML page (`href` and `src`) leads to a file
of the site and, when it names an anchor (`page/#section`), to an element
with that id. External links (`https:`, `mailto:`, ...) are not followed.
Exits with status 1 and one line per problem when something is broken.
Needs only the standard library.
"""

import argparse
import html.parser
import pathlib
import posixpath
import re
import sys
import urllib.parse
from typing import Iterable, List, Optional, Sequence, Set, Tuple

# Pages mkdocs writes beyond the nav, whose links are site-absolute.
SKIPPED_PAGES = {"404.html"}


class _PageParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []

    def handle_starttag(
        self, tag: str, attrs: List[Tuple[str, Optional[str]]]
    ) -> None:
        attrs = dict(attrs)
        for name in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(name):
                self.ids.add(attrs[name])
        for name in ("href", "src"):
            if attrs.get(name) is not None:
                self.links.append(attrs[name])


def parse_page(path: pathlib.Path) -> Tuple[Set[str], List[str]]:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser.ids, parser.links


def nav_pages(config_text: str) -> List[str]:
    """The Markdown files named in the `nav:` block of an mkdocs config."""
    pages, in_nav = [], False
    for line in config_text.splitlines():
        if re.match(r"^nav:\s*$", line):
            in_nav = True
            continue
        if in_nav and line and not line[0].isspace() and not line.startswith("#"):
            break
        match = re.search(r"([\w./-]+\.md)\s*[\"']?\s*$", line) if in_nav else None
        if match:
            pages.append(match.group(1))
    return pages


def built_path(
    site: pathlib.Path, page: str, use_directory_urls: bool = True
) -> pathlib.Path:
    """Where mkdocs writes the HTML of a Markdown page."""
    stem = page[: -len(".md")]
    name = posixpath.basename(stem)
    if name in ("index", "README"):
        return site / posixpath.dirname(stem) / "index.html"
    if use_directory_urls:
        return site / stem / "index.html"
    return site / f"{stem}.html"


def _is_external(link: str) -> bool:
    parsed = urllib.parse.urlsplit(link)
    return bool(parsed.scheme or parsed.netloc) or link.startswith("//")


def _target_file(
    site: pathlib.Path, page: pathlib.Path, path: str
) -> Optional[pathlib.Path]:
    """The file a relative URL path of `page` resolves to, or None."""
    if path.startswith("/"):
        target = site / path.lstrip("/")
    else:
        target = page.parent / path
    target = pathlib.Path(posixpath.normpath(str(target)))
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


def check_site(
    site: "str | pathlib.Path",
    nav: Iterable[str] = (),
    use_directory_urls: bool = True,
) -> List[str]:
    """Problems of the built site `site`: missing nav pages, broken links."""
    site = pathlib.Path(site).resolve()
    problems = []
    for page in nav:
        if not built_path(site, page, use_directory_urls).is_file():
            problems.append(f"nav page {page} was not built")
    pages = sorted(site.rglob("*.html"))
    ids = {}
    for page in pages:
        ids[page], _ = parse_page(page)
    for page in pages:
        if page.name in SKIPPED_PAGES and page.parent == site:
            continue
        where = page.relative_to(site)
        for link in dict.fromkeys(parse_page(page)[1]):
            if not link or _is_external(link):
                continue
            parsed = urllib.parse.urlsplit(link)
            path = urllib.parse.unquote(parsed.path)
            target = _target_file(site, page, path) if path else page
            if target is None:
                problems.append(f"{where}: broken link {link}")
                continue
            fragment = urllib.parse.unquote(parsed.fragment)
            if fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target], _ = parse_page(target)
                if fragment not in ids[target]:
                    problems.append(f"{where}: broken anchor {link}")
    return problems


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default="site")
    parser.add_argument("--config", default="mkdocs.yml")
    args = parser.parse_args(argv)
    config = pathlib.Path(args.config).read_text(encoding="utf-8")
    directory_urls = not re.search(
        r"^use_directory_urls:\s*false", config, re.MULTILINE
    )
    nav = nav_pages(config)
    if not nav:
        print(f"{args.config}: no nav pages found", file=sys.stderr)
        return 1
    problems = check_site(args.site, nav, directory_urls)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    pages = len(list(pathlib.Path(args.site).rglob("*.html")))
    print(f"{args.site}: {len(nav)} nav pages built, {pages} HTML pages, "
          "no broken internal link or anchor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
