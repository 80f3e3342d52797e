// Typeset the maths pymdownx.arithmatex marks (generic mode: \( \) inline, \[ \] display) with
// the KaTeX vendored under vendor/katex, so that the site renders it offline.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".arithmatex").forEach(function (element) {
    var source = element.textContent.trim();
    var display = source.startsWith("\\[");
    katex.render(source.slice(2, -2), element, { displayMode: display, throwOnError: false });
  });
});
