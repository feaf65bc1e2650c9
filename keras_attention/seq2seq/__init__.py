"""Sequence-to-sequence tasks built on the layers: serving exported models.

- `web`: a local web page for an exported string SavedModel (type text,
  see the translations, the attention heatmap and the word links), with
  `web_requests` (the request checks and limits), `web_translator` (the
  SavedModel's answers as JSON) and `web_page` (the HTML and script).
"""
