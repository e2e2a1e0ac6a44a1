// The files of Sql/ and the build's commit, generated into this target by the EmbedFiles plugin.
