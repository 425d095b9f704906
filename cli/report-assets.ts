/** The report page's style and its chart script (plain browser JS, run after Chart.js). */

export const REPORT_STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:16px 24px;color:#1d2330;background:#f6f7f9}
header h1{font-size:22px;margin:0}header p{color:#5b6475;margin:4px 0 12px}
section{background:#fff;border:1px solid #e1e4ea;border-radius:6px;padding:12px 16px;margin:12px 0}
h2{font-size:16px;margin:0 0 8px}
.cards{display:flex;gap:12px;flex-wrap:wrap;background:none;border:0;padding:0}
.card{flex:1;min-width:140px;background:#fff;border:1px solid #e1e4ea;border-radius:6px;padding:10px 14px}
.card .v{font-size:24px;font-weight:600}.card .l{color:#5b6475}
.row{display:flex;gap:16px;flex-wrap:wrap;align-items:flex-start}
.chart{flex:1;min-width:320px;height:220px;position:relative}
table{border-collapse:collapse;margin:8px 16px 8px 0;min-width:260px}
th,td{border-bottom:1px solid #eceef2;padding:3px 8px;text-align:left;vertical-align:top}
th{color:#5b6475;font-weight:600}.n{text-align:right;font-variant-numeric:tabular-nums}
td.ex{font-size:12px;word-break:break-all}.none,.note{color:#7a8292;font-size:12px}
tr.total td{font-weight:600}
`;

/** Draws the charts from the embedded figures (#report-data). */
export const REPORT_SCRIPT = `
(function () {
  var d = JSON.parse(document.getElementById('report-data').textContent);
  var palette = ['#3366cc', '#dc3912', '#ff9900', '#109618', '#990099', '#0099c6', '#dd4477', '#66aa00'];
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  function pairs(o) { return Object.keys(o).map(function (k) { return [k, o[k]]; }).sort(function (a, b) { return b[1] - a[1]; }); }
  function bar(id, title, rows, opts) {
    new Chart(document.getElementById(id), {
      type: (opts && opts.type) || 'bar',
      data: { labels: rows.map(function (r) { return r[0]; }),
        datasets: [{ label: title, data: rows.map(function (r) { return r[1]; }), backgroundColor: palette }] },
      options: { plugins: { title: { display: true, text: title }, legend: { display: !!(opts && opts.legend) } } }
    });
  }
  function series(id, title, buckets, names, stacked) {
    new Chart(document.getElementById(id), {
      type: 'bar',
      data: { labels: buckets.map(function (b) { return b.t.slice(0, 16).replace('T', ' '); }),
        datasets: names.map(function (n, i) { return { label: n, data: buckets.map(function (b) { return b.values[i]; }), backgroundColor: palette[i] }; }) },
      options: { plugins: { title: { display: true, text: title } },
        scales: { x: { stacked: stacked }, y: { stacked: stacked, beginAtZero: true } } }
    });
  }
  bar('chart-states', 'URLs by state', pairs(d.states));
  bar('chart-http', 'URLs by HTTP status', pairs(d.httpStatus));
  bar('chart-error-codes', 'errors by code', pairs(d.errorCodes));
  bar('chart-depth', 'documents by depth', Object.keys(d.docsByDepth).map(function (k) { return [k, d.docsByDepth[k]]; }));
  bar('chart-queue', 'documents by source queue', pairs(d.docsByQueue), { type: 'doughnut', legend: true });
  bar('chart-freshness', 'documents by age', d.freshness.buckets.map(function (b) { return [b.label, b.count]; }));
  series('chart-changes', 'change feed per ' + d.changes.bucketMinutes + ' min', d.changes.buckets, ['upserts', 'deletions'], true);
  series('chart-fetches', 'pages fetched per ' + d.fetches.bucketMinutes + ' min (last fetch of each URL)', d.fetches.buckets, ['pages'], false);
  new Chart(document.getElementById('chart-runs'), {
    type: 'line',
    data: { labels: d.runs.map(function (r) { return r.startedAt.slice(0, 16).replace('T', ' '); }),
      datasets: [{ label: 'pages/s', data: d.runs.map(function (r) { return r.pagesPerSecond; }), borderColor: palette[0] },
        { label: '$ per million pages', data: d.runs.map(function (r) { return r.costPerMillion; }), borderColor: palette[1], yAxisID: 'y1' }] },
    options: { plugins: { title: { display: true, text: 'last runs: pages/s and cost' } },
      scales: { y: { beginAtZero: true }, y1: { beginAtZero: true, position: 'right' } } }
  });
  document.body.setAttribute('data-charts', 'drawn');
})();
`;
