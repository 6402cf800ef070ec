// Pre-selects the browser's time zone in selects marked data-browser-zone.
// The pages work without it (the server guesses from Accept-Language).
(function () {
  var zone;
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
  if (!zone) { return; }
  document.addEventListener("DOMContentLoaded", function () {
    var sels = document.querySelectorAll("select[data-browser-zone]");
    for (var i = 0; i < sels.length; i++) {
      var s = sels[i], found = false;
      for (var j = 0; j < s.options.length; j++) {
        if (s.options[j].value === zone) { found = true; break; }
      }
      if (!found) { s.add(new Option(zone, zone), 0); }
      s.value = zone;
    }
  });
})();
