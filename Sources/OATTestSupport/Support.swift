import OATFiles
