"""The one page of `keras_attention.web`: HTML, CSS and script.

The script posts the text to `/api/translate` and draws the answer with
SVG: the attention heatmap of the chosen hypothesis (target tokens down,
source tokens across, darker = more weight) and its word links, lines
from each source word to the target words linked to it. Text from the
model is inserted with `textContent` only, never parsed as HTML.

The page's words (title, introduction, placeholder, button, example
texts) are a `PageOptions`, chosen by the server's caller: `NMT_PAGE` and
`G2P_PAGE` are the two examples' copies.
"""

import dataclasses
import html
import json
import re
from typing import Optional
from typing import Tuple


@dataclasses.dataclass(frozen=True)
class PageOptions:
    """The words of the page.

    Args:
        title: The heading and the window title; `""` for the model's name
            (the server's `title`). Defaults to `""`.
        intro: The line under the heading.
        placeholder: The grey text of the empty text box.
        button: The label of the button that sends the text.
        examples: Texts shown as buttons that fill the text box. Defaults
            to `()`.
    """

    title: str = ""
    intro: str = (
        "Type a text, see its translations, where the attention looks "
        "(the heatmap) and the word links extracted from it."
    )
    placeholder: str = "Type a text to translate"
    button: str = "Translate"
    examples: Tuple[str, ...] = ()


# The translation example's page (`python -m examples.nmt serve`).
NMT_PAGE = PageOptions(
    placeholder="vendredi 20 octobre 1933",
    examples=("vendredi 20 octobre 1933", "le 3 mars 2021", "lundi 5 mai"),
)
# The pronunciation example's page (`python -m examples.g2p serve`).
G2P_PAGE = PageOptions(
    intro="Type an English word, see its pronunciations (ARPAbet phones), "
    "where the attention of each phone looks (the heatmap) and the "
    "letter-phone links extracted from it.",
    placeholder="physics",
    button="Pronounce",
    examples=("physics", "read", "attention", "knight"),
)

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__ · attention</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em auto;
       max-width: 64em; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
.note { color: #666; font-size: 0.9em; margin-top: 0; }
textarea { width: 100%; font-size: 1.1em; box-sizing: border-box; }
.controls { margin: 0.5em 0 1em; display: flex; gap: 1em;
            align-items: center; flex-wrap: wrap; }
.controls input { width: 4em; }
button { font-size: 1em; padding: 0.3em 1.2em; }
#error { color: #a00; font-weight: bold; min-height: 1.2em; }
#hypotheses { border-collapse: collapse; margin-bottom: 1em; }
#hypotheses td, #hypotheses th { padding: 0.2em 0.7em; text-align: left; }
#hypotheses tr.hyp { cursor: pointer; }
#hypotheses tr.hyp:hover { background: #eef; }
#hypotheses tr.chosen { background: #dde6ff; }
.score { color: #666; font-variant-numeric: tabular-nums; }
svg text { font-size: 13px; fill: #222; }
svg .link { stroke: #2255cc; stroke-width: 2; opacity: 0.7; }
svg .word { fill: #f3f5fa; stroke: #9aa; }
h2 { font-size: 1.1em; margin: 1em 0 0.3em; }
</style>
</head>
<body>
<h1>__TITLE__</h1>
<p class="note">__INTRO__</p>
<textarea id="text" rows="2" maxlength="__MAX_CHARS__"
  placeholder="__PLACEHOLDER__"></textarea>
<div id="examples" class="controls">__EXAMPLES__</div>
<div class="controls">
  <button id="translate">__BUTTON__</button>
  <label>beam width <input id="beam_width" type="number" min="1"
    max="__MAX_BEAM__" value="__BEAM__"></label>
  <label>n-best <input id="n_best" type="number" min="1"
    max="__MAX_BEAM__" value="__NBEST__"></label>
  <span id="status" class="note"></span>
</div>
<div id="error" role="alert"></div>
<table id="hypotheses"></table>
<p id="score-note" class="note" hidden>Scores are natural
log-probabilities of the output (0 is certain, lower is less likely). The
greedy row's score is the sum of its tokens' log-probabilities; the beam
and n-best rows are ranked by that sum divided by a length penalty
<code>((5 + n) / 6) ** alpha</code> (<code>n</code> tokens, alpha 0.6
unless the export chose another): the same output scores higher in a
beam row than in the greedy row. The sum itself is each hypothesis's
<code>log_prob</code> in the JSON answer.</p>
<h2>Word links</h2>
<svg id="links" width="0" height="0"></svg>
<h2>Attention</h2>
<svg id="heatmap" width="0" height="0"></svg>
<script id="info" type="application/json">__INFO__</script>
<script>
"use strict";
const SVG = "http://www.w3.org/2000/svg";
let answer = null;

function el(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function textWidth(svg, words) {
  const probe = el("text", {x: 0, y: 0});
  svg.appendChild(probe);
  const widths = words.map(w => {
    probe.textContent = w;
    return probe.getComputedTextLength();
  });
  probe.remove();
  return widths;
}

function clear(svg) {
  while (svg.firstChild) svg.firstChild.remove();
}

function drawHeatmap(hyp) {
  const svg = document.getElementById("heatmap");
  clear(svg);
  const src = answer.source_tokens, tgt = hyp.target_tokens;
  const cell = 26;
  const left = Math.max(40, ...textWidth(svg, tgt)) + 10;
  const top = Math.max(40, ...textWidth(svg, src)) + 10;
  svg.setAttribute("width", left + cell * src.length + 10);
  svg.setAttribute("height", top + cell * tgt.length + 10);
  src.forEach((token, j) => {
    const x = left + j * cell + cell / 2 + 4, y = top - 6;
    svg.appendChild(el("text", {x: x, y: y, class: "source-token",
      transform: `rotate(-60 ${x} ${y})`}, token));
  });
  tgt.forEach((token, i) => {
    svg.appendChild(el("text", {x: left - 6, y: top + i * cell + cell * 0.65,
      "text-anchor": "end", class: "target-token"}, token));
    hyp.attention[i].forEach((w, j) => {
      const rect = el("rect", {x: left + j * cell, y: top + i * cell,
        width: cell - 1, height: cell - 1, class: "cell",
        fill: `rgba(20, 60, 170, ${Math.max(0.03, w)})`});
      rect.appendChild(el("title", {},
        `${token} \u2192 ${src[j]}: ${w.toFixed(3)}`));
      svg.appendChild(rect);
    });
  });
}

function placeWords(svg, words, y) {
  const widths = textWidth(svg, words);
  const boxes = [];
  let x = 10;
  words.forEach((word, i) => {
    const w = widths[i] + 14;
    boxes.push({x: x, w: w, y: y, word: word});
    x += w + 8;
  });
  return {boxes: boxes, width: x};
}

function drawLinks(hyp) {
  const svg = document.getElementById("links");
  clear(svg);
  const h = 26, gap = 90;
  const src = placeWords(svg, answer.source_words, 10);
  const tgt = placeWords(svg, hyp.target_words, 10 + h + gap);
  svg.setAttribute("width", Math.max(src.width, tgt.width) + 10);
  svg.setAttribute("height", 10 + 2 * h + gap + 10);
  hyp.links.forEach(([s, t]) => {
    const a = src.boxes[s], b = tgt.boxes[t];
    if (!a || !b) return;
    svg.appendChild(el("line", {x1: a.x + a.w / 2, y1: a.y + h,
      x2: b.x + b.w / 2, y2: b.y, class: "link"}));
  });
  for (const [side, placed] of [["source", src], ["target", tgt]]) {
    placed.boxes.forEach(box => {
      svg.appendChild(el("rect", {x: box.x, y: box.y, width: box.w,
        height: h, rx: 4, class: "word " + side + "-word"}));
      svg.appendChild(el("text", {x: box.x + 7, y: box.y + h * 0.68},
        box.word));
    });
  }
}

function choose(row, hyp) {
  for (const r of document.querySelectorAll("#hypotheses tr.hyp")) {
    r.classList.remove("chosen");
  }
  row.classList.add("chosen");
  drawLinks(hyp);
  drawHeatmap(hyp);
}

function addRow(table, label, hyp) {
  const row = document.createElement("tr");
  row.className = "hyp";
  for (const [text, cls] of [[label, ""], [hyp.translation, "translation"],
      [hyp.score === null ? "" : hyp.score.toFixed(3), "score"]]) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
  }
  row.addEventListener("click", () => choose(row, hyp));
  table.appendChild(row);
  return row;
}

function clearResults() {
  answer = null;
  document.getElementById("hypotheses").replaceChildren();
  document.getElementById("score-note").hidden = true;
  clear(document.getElementById("links"));
  clear(document.getElementById("heatmap"));
  for (const id of ["links", "heatmap"]) {
    const svg = document.getElementById(id);
    svg.setAttribute("width", 0);
    svg.setAttribute("height", 0);
  }
}

function show(data) {
  answer = data;
  const table = document.getElementById("hypotheses");
  table.replaceChildren();
  const head = document.createElement("tr");
  for (const t of ["", "translation", "score"]) {
    const th = document.createElement("th");
    th.textContent = t;
    head.appendChild(th);
  }
  table.appendChild(head);
  const first = addRow(table, "greedy", data.greedy);
  addRow(table, "beam", data.beam);
  data.nbest.forEach((hyp, i) => addRow(table, `n-best ${i + 1}`, hyp));
  choose(first, data.greedy);
  document.getElementById("score-note").hidden = false;
  document.getElementById("status").textContent =
    `${data.seconds.toFixed(2)} s`;
}

async function translate() {
  const error = document.getElementById("error");
  const status = document.getElementById("status");
  error.textContent = "";
  status.textContent = "translating\u2026";
  const body = {
    text: document.getElementById("text").value,
    beam_width: parseInt(document.getElementById("beam_width").value, 10),
    n_best: parseInt(document.getElementById("n_best").value, 10),
  };
  try {
    const response = await fetch("/api/translate", {method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify(body)});
    const data = await response.json();
    if (!response.ok) {
      clearResults();
      error.textContent = data.error || `HTTP ${response.status}`;
      status.textContent = "";
      return;
    }
    show(data);
  } catch (e) {
    clearResults();
    error.textContent = `No answer from the server: ${e}`;
    status.textContent = "";
  }
}

document.getElementById("translate").addEventListener("click", translate);
for (const button of document.querySelectorAll("#examples button")) {
  button.addEventListener("click", () => {
    document.getElementById("text").value = button.textContent;
    translate();
  });
}
document.getElementById("text").addEventListener("keydown", e => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); translate(); }
});
</script>
</body>
</html>
"""


def render_page(info: dict, options: Optional[PageOptions] = None) -> str:
    """The page's HTML, with the title and limits of `info`.

    Args:
        info: The dict of `GET /api/info`: `title` (optional) and `limits`
            (`max_text_chars`, `max_beam_width`, `beam_width`, `n_best`).
        options: The page's words; `options.title`, when not empty, comes
            before `info["title"]`. Defaults to `PageOptions()`.

    Returns:
        The HTML text.
    """
    options = options or PageOptions()
    limits = info["limits"]
    title = options.title or info.get("title") or "Attention"
    examples = "".join(
        f'<button type="button" class="example">{html.escape(text)}</button>'
        for text in options.examples
    )
    # `<` escaped so that no string of `info` can close the script element.
    embedded = json.dumps(info).replace("<", "\\u003c")
    replacements = {
        "__TITLE__": html.escape(str(title)),
        "__INTRO__": html.escape(options.intro),
        "__PLACEHOLDER__": html.escape(options.placeholder),
        "__BUTTON__": html.escape(options.button),
        "__EXAMPLES__": examples,
        "__MAX_CHARS__": str(int(limits["max_text_chars"])),
        "__MAX_BEAM__": str(int(limits["max_beam_width"])),
        "__BEAM__": str(int(limits["beam_width"])),
        "__NBEST__": str(int(limits["n_best"])),
        "__INFO__": embedded,
    }
    # One pass: a value that holds a placeholder's name is not replaced.
    return re.sub(
        "|".join(replacements), lambda m: replacements[m.group(0)], _PAGE
    )
