import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

extension Output {
    /// Prints every item of a walk as it arrives: an NDJSON line each (a view's lines on a
    /// terminal), or with `slurp` one JSON array written as the items arrive (memory stays
    /// flat). When the walk fails part-way, what was printed stays, and a slurped array is
    /// closed so it still parses. A failed write to stdout (the reader quit: `| head`)
    /// ends the walk at once: no more pages are fetched for nobody (`finish` decides what
    /// it means).
    func walk(_ paginator: Paginator, request: APIRequest, scheme: PageScheme?, slurp: Bool, view: HumanView?) throws(DouctlError) {
        func stopIfOutputFailed() throws(DouctlError) {
            flush()
            if documentsStopped { throw stdoutFailure }
        }
        guard slurp else {
            let itemView = wantsView ? view : nil
            let itemContext = viewContext
            try paginator.walk(request, scheme: scheme) { (item: JSON) throws(DouctlError) in
                if let itemView { viewLines(itemView.item(TerminalText.shown(item), itemContext)) } else { jsonLine(item) }
                try stopIfOutputFailed()
            }
            return
        }
        let pretty = prettyJSON
        var count = 0
        var finished = false
        defer {
            // A walk that printed nothing and failed prints nothing; otherwise the array closes.
            if count > 0 || finished {
                writeDocument(Array((count == 0 ? "[]\n" : pretty ? "\n]\n" : "]\n").utf8))
                flush()
            }
        }
        try paginator.walk(request, scheme: scheme) { (item: JSON) throws(DouctlError) in
            if documentsStopped { throw stdoutFailure }
            var text = count == 0 ? "[" : ","
            if pretty {
                text += "\n  " + item.text(.pretty).replacingAll("\n", with: "\n  ")
            } else {
                text += item.text(.compact)
            }
            writeDocument(Array(text.utf8))
            count += 1
        }
        finished = true
    }
}
