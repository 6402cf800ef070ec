// Keeps the email preview of a form marked data-preview up to date as
// its choices change (feed address, format, delivery, time zone). The
// pages work without it: the "Preview" button asks the server for the
// same preview.
(function () {
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.querySelector("form[data-preview]");
    if (!form) { return; }
    var fig = document.getElementById(form.getAttribute("data-preview"));
    var frame = fig && fig.querySelector("iframe");
    if (!frame) { return; }
    var timer = null;
    function val(name) {
      var el = form.querySelector("input[name='" + name + "']:checked") ||
        form.querySelector("select[name='" + name + "'], input[name='" + name + "']:not([type=radio])");
      return el ? el.value.trim() : "";
    }
    function update() {
      var url = val("url");
      if (url.indexOf(".") < 0 && url.indexOf(":") < 0) { return; }
      var q = new URLSearchParams();
      q.set("url", url);
      ["format", "delivery", "zone"].forEach(function (k) { if (val(k)) { q.set(k, val(k)); } });
      var src = "/preview?" + q.toString();
      if (frame.getAttribute("src") === src) { return; }
      frame.setAttribute("src", src);
      fig.hidden = false;
    }
    function later(ms) { clearTimeout(timer); timer = setTimeout(update, ms); }
    form.addEventListener("change", function () { later(200); });
    form.addEventListener("input", function (e) { if (e.target.name === "url") { later(1500); } });
  });
})();
