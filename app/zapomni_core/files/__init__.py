"""Files read from disk: the safe walker, the document formats, and the incremental walk both file jobs share."""
