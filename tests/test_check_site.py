"""tools/check_site.py finds missing nav pages, broken links and anchors."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "check_site", ROOT / "tools" / "check_site.py"
)
check_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_site)

CONFIG = """site_name: tiny
nav:
  - Home: index.md
  - Guides:
      - "A guide: the first": guide.md
      - api/ref.md
plugins:
  - search
"""


def _page(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")


def _tiny_site(root):
    site = root / "site"
    _page(site / "index.html",
          '<h1 id="home">Home</h1><a href="guide/">g</a>'
          '<a href="guide/#usage">usage</a><a href="https://example.org/x">x</a>'
          '<img src="images/a.png"><a href="#home">top</a>')
    (site / "images").mkdir()
    (site / "images" / "a.png").write_bytes(b"png")
    _page(site / "guide" / "index.html",
          '<h2 id="usage">Usage</h2><a href="../api/ref/#f">f</a>'
          '<a href="..">home</a><a href="mailto:a@b.c">mail</a>')
    _page(site / "api" / "ref" / "index.html",
          '<div id="f"></div><a href="../../guide/#usage">back</a>')
    return site


def test_nav_pages_of_the_config():
    assert check_site.nav_pages(CONFIG) == ["index.md", "guide.md", "api/ref.md"]


def test_nav_pages_of_the_project():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = check_site.nav_pages(config)
    assert "index.md" in pages and "benchmarks.md" in pages
    for page in pages:
        assert (ROOT / "docs" / page).is_file(), page


def test_a_sound_site_passes(tmp_path):
    site = _tiny_site(tmp_path)
    nav = check_site.nav_pages(CONFIG)
    assert check_site.check_site(site, nav) == []


def test_planted_problems_are_found(tmp_path):
    site = _tiny_site(tmp_path)
    (site / "api" / "ref" / "index.html").unlink()
    _page(site / "guide" / "index.html",
          '<h2 id="usage">Usage</h2><a href="../missing/">m</a>'
          '<a href="../#nowhere">n</a><img src="../images/b.png">')
    problems = check_site.check_site(site, check_site.nav_pages(CONFIG))
    assert "nav page api/ref.md was not built" in problems
    assert "index.html: broken anchor guide/#usage" not in problems
    assert "guide/index.html: broken link ../missing/" in problems
    assert "guide/index.html: broken anchor ../#nowhere" in problems
    assert "guide/index.html: broken link ../images/b.png" in problems


def test_main_exit_status(tmp_path, capsys):
    site = _tiny_site(tmp_path)
    config = tmp_path / "mkdocs.yml"
    config.write_text(CONFIG, encoding="utf-8")
    assert check_site.main([str(site), "--config", str(config)]) == 0
    (site / "guide" / "index.html").unlink()
    assert check_site.main([str(site), "--config", str(config)]) == 1
    assert "nav page guide.md was not built" in capsys.readouterr().err
