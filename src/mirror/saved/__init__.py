"""Pages the user's browser saved (SingleFile's HTML, Chromium's MHTML, a saved `.html`): read
(`read`), then stored in the WARC files and the archive as a fetched page is (`add`). Its own
stage, beside the browser's and below the faces, so that `mirror add` and the plugin's upload
route share one path without the plugin importing the fetch run: serving never fetches."""
