// Starts Swagger UI on /docs from the settings the page carries in a JSON data block
// (<script type="application/json" id="swagger-ui-config">): no inline script, so the page's
// Content-Security-Policy can say script-src 'self'.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("swagger-ui-config").textContent);
  var redirectPath = config.oauth2RedirectPath;
  delete config.oauth2RedirectPath;
  config.oauth2RedirectUrl = window.location.origin + redirectPath;
  config.presets = [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset];
  window.ui = SwaggerUIBundle(config);
})();
