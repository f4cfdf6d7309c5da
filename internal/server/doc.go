// Package server is Lookout's HTTP API under /api/v1 over any store.Store:
// datasets, traces, annotations, the Invariant-compatible push endpoint, API
// keys and login sessions. See DESIGN.md, "HTTP API". All under /api/v1,
// JSON in and out:
//
//	POST   /login                          {name, password} → session cookie (HttpOnly, SameSite=Strict)
//	POST   /logout                         end the session
//	GET    /me                             who the caller is, and whether the server is in local mode
//	POST   /keys                           {name?} → a new API key, shown this once
//	GET    /keys                           the caller's keys (last four characters only)
//	DELETE /keys/{id}                      revoke a key
//	POST   /push/trace                     Invariant's push API: {messages, annotations?, dataset?, metadata?} → {id: [...], dataset?}
//	                                       (or {traces: [canonical...], dataset?}, which Lookout's client sends)
//	POST   /datasets                       {name, public?, metadata?} → the dataset
//	GET    /datasets                       the caller's datasets and every public one (?name= ?owner= ?mine=true)
//	GET    /datasets/{id}                  one dataset
//	DELETE /datasets/{id}                  delete it with its traces and annotations
//	GET    /datasets/{id}/metadata         its metadata object
//	PUT    /datasets/{id}/metadata         merge an object into it (?mode=replace to replace)
//	POST   /datasets/{id}/upload           import a file in any readable format (raw body or multipart "file";
//	                                       ?mode=all-or-nothing|skip-invalid ?format= ?filename=; SSE progress
//	                                       with Accept: text/event-stream)
//	GET    /datasets/{id}/traces           its traces by index, a page at a time (?limit= ?cursor=)
//	GET    /datasets/{id}/export           the dataset as JSONL (?format=invariant|canonical)
//	GET    /traces/{id}                    one trace as canonical JSON (?format=invariant)
//	GET    /traces/{id}/download           the same as a file to save
//	POST   /traces/{id}/events             append events to a live trace
//	DELETE /traces/{id}                    delete a trace
//	GET    /traces/{id}/annotations        its annotations
//	POST   /traces/{id}/annotations        {address, content, source?, extra?} → the annotation
//	PUT    /traces/{id}/annotations        replace every annotation of ?source= at once: {annotations: [...]}
//	PUT    /traces/{id}/annotations/{aid}  {content?, extra?} → the annotation
//	DELETE /traces/{id}/annotations/{aid}  delete an annotation
//
// Errors are {"error": {"code", "message", "details"}}: 400 invalid_json
// (details: line, col, path) or bad_request, 401 unauthorized, 403
// forbidden, 404 not_found (also for another user's private data), 405,
// 409 conflict, 413 body_too_large, 415, 422 invalid (details.errors lists
// every problem of a rejected upload), 500 internal.
package server
