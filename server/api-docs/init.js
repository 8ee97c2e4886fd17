// Starts swagger-ui on /docs with the server's OpenAPI document. A file, not inline script, so the page's CSP can forbid inline script.
/* global SwaggerUIBundle */
window.ui = SwaggerUIBundle({
  url: '/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  // Shown on each operation, so a reader can match what clients (and the role table) call it.
  displayOperationId: true,
  displayRequestDuration: true,
  // The default would put a badge on the page that sends the document to validator.swagger.io.
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
