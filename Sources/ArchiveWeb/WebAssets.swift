/// The archive's stylesheet and script, embedded: nothing is fetched at build or run time, and
/// the script is the few lines the pages need (seeking to a linked moment, showing captions).
public enum WebAssets {
    public static let stylesheet = """
        :root { color-scheme: light dark; --line: #8884; --accent: #2a6fdb; }
        body { font: 14px/1.45 system-ui, sans-serif; margin: 0; }
        header { display: flex; gap: 1em; align-items: center; padding: .6em 1em; border-bottom: 1px solid var(--line); }
        header .home { font-weight: 600; text-decoration: none; color: inherit; }
        header form { margin-left: auto; }
        main { padding: 0 1em 2em; max-width: 1100px; }
        h1 small { font-weight: normal; opacity: .7; font-size: 60%; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: .25em .5em; border-bottom: 1px solid var(--line); vertical-align: top; }
        td.id, td.message { font-family: ui-monospace, monospace; font-size: 90%; word-break: break-all; }
        form.filters { display: flex; gap: .8em; flex-wrap: wrap; align-items: end; margin: .5em 0 1em; }
        dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
        dl.summary dt { opacity: .7; }
        dl.summary dd { margin: 0; }
        .error { color: #c0392b; } .warning { color: #b9770e; } .empty { opacity: .7; }
        .timeline-box { overflow-x: auto; }
        svg.timeline text { font-size: 11px; fill: currentColor; }
        svg.timeline text.axis { text-anchor: middle; opacity: .7; }
        svg.timeline line.grid { stroke: var(--line); }
        svg.timeline rect.part { fill: var(--accent); opacity: .75; stroke: Canvas; stroke-width: 1; }
        svg.timeline rect.part.interrupted { fill: #e67e22; } svg.timeline rect.part.recording { fill: #27ae60; }
        svg.timeline rect.presence { fill: currentColor; opacity: .35; }
        svg.timeline rect.outage { fill: #c0392b; opacity: .18; }
        svg.timeline line.tick { stroke: #8e44ad; stroke-width: 1.5; }
        svg.timeline line.tick.notify { stroke: #7f8c8d; }
        .players { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 1em; }
        figure.player { margin: 0; } figure.player video, figure.player audio { width: 100%; background: #000; }
        figure.player.main video, figure.player.composition video { max-height: 70vh; }
        """

    public static let script = """
        "use strict";
        // #t=SECONDS on a recording's page: play from that moment (and again when the link changes).
        function linkedTime() {
          const match = /(?:^#|&)t=([0-9]+(?:\\.[0-9]+)?)/.exec(location.hash);
          return match ? parseFloat(match[1]) : null;
        }
        function seekToLink() {
          const player = document.querySelector("figure.main video, figure.main audio");
          const time = linkedTime();
          if (!player || time === null) return;
          const seek = () => { player.currentTime = time; };
          if (player.readyState >= 1) seek(); else player.addEventListener("loadedmetadata", seek, { once: true });
        }
        document.addEventListener("DOMContentLoaded", () => {
          for (const media of document.querySelectorAll("video, audio")) {
            for (const track of media.textTracks) if (track.kind === "captions") track.mode = "showing";
          }
          seekToLink();
        });
        window.addEventListener("hashchange", seekToLink);
        """
}
